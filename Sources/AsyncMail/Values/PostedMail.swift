/// Any posted mail, type-erased, as seen by a tap on a whole ``Mailroom``.
///
/// Made by ``Mailroom/tap(bufferingPolicy:where:)`` for logging, auditing and
/// debugging tools that must see every post without knowing every mail type.
public struct PostedMail: Sendable {
    /// The mail that was posted.
    public let mail: any Mail
    /// The mail's type. Use ``mail(as:)`` to get the mail back as a concrete type.
    public let mailType: any Mail.Type
    /// The sender it was posted from, or `nil` for mail posted without one.
    public let sender: (any Sendable)?
    /// Whether this mail ends its post: always for ``Mailroom/post(_:)``, and only for the final
    /// mail of a ``Mailroom/post(contentsOf:)`` batch, whose mails reach a tap consecutively.
    ///
    /// A tap that forwards mail elsewhere, such as a relay to other processes, gathers mail until
    /// this is `true` to forward a batch as one:
    ///
    /// ```swift
    /// pending.append(posted)
    /// if posted.isLastInPost { try await send(pending) }
    /// ```
    public let isLastInPost: Bool
    /// The context the mail was posted in, as the mailroom's ``MailroomInstrumentation`` captured
    /// it; ``PostContext/none`` without one. A relay carries it to other processes.
    public let context: PostContext

    /// The mail type's fully qualified name, such as `"Shop.OrderPlaced"`.
    public var typeName: String { String(reflecting: mailType) }

    /// The mail as `M`, or `nil` when it is of another type.
    ///
    /// ```swift
    /// if let order = posted.mail(as: OrderPlaced.self) { audit(order) }
    /// ```
    public func mail<M: Mail>(as type: M.Type) -> M? {
        mail as? M
    }

    /// Creates a posted-mail record; the ``Mailroom`` makes these for you.
    public init(
        mail: any Mail,
        mailType: any Mail.Type,
        sender: (any Sendable)?,
        isLastInPost: Bool = true,
        context: PostContext = .none
    ) {
        self.mail = mail
        self.mailType = mailType
        self.sender = sender
        self.isLastInPost = isLastInPost
        self.context = context
    }
}
