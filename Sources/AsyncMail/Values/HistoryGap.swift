/// Mail that a resuming subscription can no longer be given: reported to it before anything else.
///
/// ``Code/expired`` says the position is older than what the room keeps, and ``missed`` is the
/// exact number of the room's mails retention dropped after it (for a subscription that hears
/// several rooms, of the type's mails after its position that no room keeps; with a `fromAny:` or
/// `where:` filter, some of them may be mail it would not have heard). ``Code/otherEpoch`` says the position is from another
/// mailroom or from before a restart; how much was missed is unknown. Either way, the subscription
/// goes on with what the history still keeps (for `.expired`) or with live mail.
public struct HistoryGap: Sendable, Hashable, CustomStringConvertible {
    /// Why mail was missed.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The room's history no longer keeps the mail after the position.
        public static let expired = Code("expired")
        /// The position is of another epoch: another mailroom, or one before a restart.
        public static let otherEpoch = Code("otherEpoch")

        public var description: String { name }
    }

    /// Why mail was missed.
    public let code: Code
    /// How many mails were missed, or nil when that cannot be known.
    public let missed: Int?

    /// A gap, for tests.
    public init(code: Code, missed: Int?) {
        self.code = code
        self.missed = missed
    }

    public var description: String {
        guard code == .expired else {
            return
                "the position is of another epoch: \(missed.map { counting($0, "mail") } ?? "an unknown number of mails") missed"
        }
        guard let missed else { return "an unknown number of mails after the position are no longer kept" }
        return counting(missed, "mail") + " after the position " + (missed == 1 ? "is" : "are") + " no longer kept"
    }
}
