/// A sender as history keeps it: unlike ``SenderKey``, which a post holds unretained for its own
/// duration, it can outlive the post, so an object sender is held weakly with its identity.
struct HistorySender: Sendable {
    /// An object sender, weakly; a `final class` so that the weak reference is one value.
    final class WeakObject: Sendable {
        weak let object: (any AnyObject & Sendable)?
        let id: ObjectIdentifier
        /// Its type, for `fromAny:`, which still hears its kept mail after it has gone.
        let type: ObjectIdentifier

        init(_ object: any AnyObject & Sendable) {
            self.object = object
            self.id = ObjectIdentifier(object)
            self.type = ObjectIdentifier(Swift.type(of: object))
        }
    }

    enum Kind: Sendable {
        case none
        case object(WeakObject)
        case value(ValueSender)
    }

    let kind: Kind

    init(_ key: SenderKey) {
        switch key {
        case .none: kind = .none
        case .object(let sender): kind = .object(WeakObject(sender.sendableObject))
        case .value(let value): kind = .value(value)
        }
    }

    /// The sender's type, for `fromAny:`; nil for mail posted without a sender.
    var type: ObjectIdentifier? {
        switch kind {
        case .none: nil
        case .object(let object): object.type
        case .value(let value): value._type
        }
    }

    /// Whether mail from this sender reaches a subscription pinned to `pin`. An object matches by
    /// identity while both are alive, so a new object at a departed one's address is not it.
    func matches(_ pin: HistorySender) -> Bool {
        switch (kind, pin.kind) {
        case (.object(let sender), .object(let pinned)):
            guard sender.id == pinned.id, let a = sender.object, let b = pinned.object else { return false }
            return a === b
        case (.value(let sender), .value(let pinned)):
            return sender == pinned
        default:
            return false
        }
    }
}
