/// Why a position was refused: it is not a position's string, or no mail of this mailroom could
/// have had it.
///
/// A position comes from a client, so it is untrusted: refusing one never crashes or ends
/// anything else. Switch over ``code``, with a `default`: codes may be added.
///
/// ```swift
/// do {
///     let position = try MailPosition(parsing: query)
///     resumed = try await mailroom.subscribe(to: ChatLine.self, after: position)
/// } catch {
///     print(error)  // for example "a malformed position: not three parts separated by '-'"
/// }
/// ```
public struct PositionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with the position.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The text is not a position's string.
        public static let malformed = Code("malformed")
        /// The position is of this mailroom's epoch but of another mail type's history.
        public static let otherMailType = Code("otherMailType")
        /// The position is of this mailroom's epoch and type, but of another room: resume each
        /// room with a position it gave.
        public static let otherRoom = Code("otherRoom")
        /// The position is of this mailroom's epoch, type and room, but past the room's newest
        /// mail: no mail has had it (forged, or from a mailroom that shared the epoch by chance).
        public static let notYetPosted = Code("notYetPosted")
        /// A room's position, of this mailroom or any other, was given to a subscription that
        /// hears several rooms (every sender, or `fromAny:`): such a subscription resumes only
        /// from the type's positions it handed out; a client resumes each room with its own.
        public static let severalRooms = Code("severalRooms")
        /// The mail type keeps no history, so it has no positions to resume from.
        public static let noHistory = Code("noHistory")

        public var description: String { name }
    }

    /// What was wrong.
    public let code: Code
    /// The details, for messages and logs.
    public let reason: String

    /// A string that is not a position's.
    public static func malformed(_ reason: String) -> PositionError {
        PositionError(code: .malformed, reason: reason)
    }

    /// A position of another mail type's history.
    public static let otherMailType = PositionError(
        code: .otherMailType,
        reason: "the position belongs to another mail type's history"
    )

    /// A position of another room of the type.
    public static let otherRoom = PositionError(
        code: .otherRoom,
        reason: "the position belongs to another room's history"
    )

    /// A position past the room's newest mail.
    public static func notYetPosted(_ sequence: UInt64, newest: UInt64) -> PositionError {
        PositionError(
            code: .notYetPosted,
            reason: "mail \(sequence) of the room has not been posted; the newest is \(newest)"
        )
    }

    /// A position given to a subscription that hears several rooms.
    public static let severalRooms = PositionError(
        code: .severalRooms,
        reason:
            "a room's position was given to a subscription that hears several rooms, which resumes only from "
            + "the type's positions"
    )

    /// A subscription with positions to a type that keeps no history.
    public static func noHistory(_ typeName: String) -> PositionError {
        PositionError(code: .noHistory, reason: "\(typeName) keeps no history")
    }

    public var description: String {
        switch code {
        case .noHistory: "\(reason): call retainHistory(_:count:maxAge:) for it first"
        case .malformed: "a malformed position: \(reason); hand back a position exactly as it was given"
        case .otherMailType: "a position of another mail type: \(reason); resume each type with its own positions"
        case .otherRoom: "a position of another room: \(reason); resume each room with its own positions"
        case .severalRooms:
            "\(reason): pass a position that subscription handed out (or nil), and resume each room with subscribe(to:from: .only(room), after:)"
        default: "a position no mail has had: \(reason); resume from a position this mailroom gave out"
        }
    }
}
