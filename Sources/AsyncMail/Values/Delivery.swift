/// One element of a ``DroppingStream``: a mail, or the mail lost at this point.
///
/// A subscription that drops mail when its consumer falls behind tells each loss in order, where
/// it happened, and keeps going: the mails before it, then ``lost(_:)`` with the exact count, then
/// the mails after it. The two cases are all there is: why a loss happened is its
/// ``MailLoss/code``, which may grow.
///
/// ```swift
/// let inbox = await mailroom.subscribe(to: ChatLine.self, from: .only(lobby), backlog: .droppingOldest(past: 256))
/// for await delivery in inbox {
///     switch delivery {
///     case .mail(let line): await connection.send(line.text)
///     case .lost(let loss): await connection.send(#"{"lost": \#(loss.count)}"#)
///     }
/// }
/// ```
public enum Delivery<Element: Sendable>: Sendable {
    /// A mail.
    case mail(Element)
    /// Mail lost at this point: ``MailLoss/count`` mails that matched the subscription and never
    /// reached it.
    case lost(MailLoss)

    /// The mail, or nil for a loss.
    public var mail: Element? {
        if case .mail(let mail) = self { return mail }
        return nil
    }

    /// The loss, or nil for a mail.
    public var loss: MailLoss? {
        if case .lost(let loss) = self { return loss }
        return nil
    }
}

extension Delivery: Equatable where Element: Equatable {}
extension Delivery: Hashable where Element: Hashable {}
