/// What a post that captured its recipients before taking its lanes came to
/// (see `Switchboard.deliverCaptured`).
@usableFromInline
enum CapturedPost: Sendable {
    case delivered(Receipt)
    /// Nobody ever subscribed to the type: it has no table.
    case noTable
    /// It keeps its latest mail, or something was filed where it looked while it waited for its
    /// lanes: it captures again, holding them.
    case again
}
