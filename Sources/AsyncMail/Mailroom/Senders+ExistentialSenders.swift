// A sender written as an existential at the call site, `.only(id as any Hashable & Sendable)`, is
// not opened into the generic form (an explicit `as` keeps the box closed) and matched only the
// unavailable catch-all, whose message is about non-Hashable senders. These take the box, and the
// optional box, as they are, and pin exactly what `.only` of the value inside would pin.
extension Senders {
    /// One sender given in an existential box, such as `id as any Hashable & Sendable`: the same as
    /// `.only` of the value inside.
    ///
    /// ```swift
    /// let lobby = await mailroom.subscribe(to: ChatLine.self, from: .only(RoomID("lobby") as any Hashable & Sendable))
    /// ```
    @inlinable @_disfavoredOverload
    public static func only(_ sender: any Hashable & Sendable) -> Senders {
        pinned(to: sender)
    }

    /// One sender given as an optional existential, `(any Hashable & Sendable)?`: the same as
    /// `.only` of the value inside; `nil` is no sender, and hears nothing.
    @inlinable @_disfavoredOverload
    public static func only(_ sender: some _OptionalExistentialSender) -> Senders {
        guard let sender = sender._sender else { return Senders(.value(ValueSender(ObjectIdentifier?.none))) }
        return pinned(to: sender)
    }
}
