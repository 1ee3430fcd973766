import Synchronization
import Testing

@testable import AsyncMail

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// A model-based test: random sequences of every operation drive a real `Mailroom`, and a simple
// sequential model of the published guarantees predicts every receipt, every stream's exact
// contents, every `subscriberCount` and `latest`, and that nothing stays alive. A failure names
// its seed; `ASYNCMAIL_MODEL_SEED=<seed> swift test --filter Model` replays it alone.

extension Tag {
    /// The model-based test; run it alone with `swift test --filter Model`.
    @Tag static var model: Self
}

/// Operations per seed: modest in `swift test`, larger in CI (`ASYNCMAIL_MODEL_OPERATIONS`).
let operationsPerSeed: Int = {
    guard let raw = getenv("ASYNCMAIL_MODEL_OPERATIONS"), let count = Int(String(cString: raw)), count > 0
    else { return 5_000 }
    return count
}()

/// The seeds to run: the one `ASYNCMAIL_MODEL_SEED` names, or 1 through `ASYNCMAIL_MODEL_SEEDS` (8).
let modelSeeds: [UInt64] = {
    if let raw = getenv("ASYNCMAIL_MODEL_SEED"), let seed = UInt64(String(cString: raw)) { return [seed] }
    guard let raw = getenv("ASYNCMAIL_MODEL_SEEDS"), let count = UInt64(String(cString: raw)), count > 0
    else { return Array(1...8) }
    return Array(1...count)
}()

/// Mail of the model: two types, so routing by type is part of what is checked.
protocol ModelMail: Mail {
    var id: Int { get }
    init(id: Int)
}

struct MailA: ModelMail { let id: Int }
struct MailB: ModelMail { let id: Int }

/// An object sender whose instances all compare equal: only identity can tell them apart.
final class ModelHashableObject: Hashable, Sendable {
    let name: String
    init(_ name: String) { self.name = name }
    static func == (lhs: ModelHashableObject, rhs: ModelHashableObject) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}

/// The owner of an observation.
final class ModelOwner: Sendable {}

/// What a consumer sees: the mail's type and id, and the sender where the element carries one.
struct Seen: Equatable, CustomStringConvertible {
    let type: String
    let id: Int
    let sender: String?
    var description: String { "\(type)#\(id)" + (sender.map { "@\($0)" } ?? "") }
}

/// Subscribes through a generic context, where nothing says whether `S` is an object.
func subscribeGenerically<M: Mail, S: Hashable & Sendable>(
    _ mailroom: Mailroom,
    to type: M.Type,
    from sender: S,
    bufferingPolicy: AsyncStream<M>.Continuation.BufferingPolicy,
    startingWithLatest: Bool,
    where isIncluded: (@Sendable (M) -> Bool)?
) async -> AsyncStream<M> {
    await mailroom.subscribe(
        to: M.self,
        from: .only(sender),
        bufferingPolicy: bufferingPolicy,
        startingWithLatest: startingWithLatest,
        where: isIncluded
    )
}

/// Posts through a generic context that knows only that the sender is an object.
func postGenerically<M: Mail, S: AnyObject & Sendable>(
    _ mailroom: Mailroom,
    _ mails: [M],
    from sender: S?
) async -> Receipt {
    mails.count == 1
        ? await mailroom.post(mails[0], from: sender) : await mailroom.post(contentsOf: mails, from: sender)
}

/// Posts through a generic context that knows only that the sender is `Hashable`.
@_disfavoredOverload
func postGenerically<M: Mail, S: Hashable & Sendable>(
    _ mailroom: Mailroom,
    _ mails: [M],
    from sender: S
) async -> Receipt {
    mails.count == 1
        ? await mailroom.post(mails[0], from: sender) : await mailroom.post(contentsOf: mails, from: sender)
}

/// Reads one stream, type-erased. Each read makes a fresh iterator over the same stream, which is
/// fine for AsyncStream while only one read waits at a time, and lets a read run under a timeout.
private struct Reader: Sendable {
    let next: @Sendable () async -> Seen?

    init<Element: Sendable>(_ stream: AsyncStream<Element>, _ observe: @escaping @Sendable (Element) -> Seen) {
        next = {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next().map(observe)
        }
    }
}

/// What an observation's handler has run for, and a signal after each call.
private final class HandledLog: Sendable {
    let ids = Locked<[Int]>([])
    let calls: AsyncStream<Void>
    let report: AsyncStream<Void>.Continuation
    init() { (calls, report) = AsyncStream.makeStream(of: Void.self) }
}

/// The run's state: the real mailroom and, beside it, the model.
private final class ModelRun {
    enum MailKind: CaseIterable { case a, b }

    enum Sender: Hashable {
        case object(Int)
        case value(String)
    }

    enum Route: Equatable {
        case everyone
        case object(Int)
        case value(String)
        /// Envelopes from every `RoomID` sender.
        case roomSenders
        /// A tap on all mail.
        case tap
    }

    enum Policy {
        case unbounded
        case oldest(Int)
        case newest(Int)
        var asDescription: String {
            switch self {
            case .unbounded: "unbounded"
            case .oldest(let limit): "oldest(\(limit))"
            case .newest(let limit): "newest(\(limit))"
            }
        }
    }

    enum State { case live, senderGone, ended }

    final class Subscription {
        let number: Int
        let kind: MailKind?
        let route: Route
        let policy: Policy
        let filtered: Bool
        var state = State.live
        /// What the real stream holds and has not handed out yet.
        var buffer: [Seen] = []
        var reader: Reader?
        /// For observations: every mail the handler must run for, and the live handler state.
        var expectedHandled: [Int] = []
        var observation: Observation?
        var log: HandledLog?
        var owner: ModelOwner?
        var ownerGone = false
        var cancelledByUs = false

        init(number: Int, kind: MailKind?, route: Route, policy: Policy, filtered: Bool) {
            self.number = number
            self.kind = kind
            self.route = route
            self.policy = policy
            self.filtered = filtered
        }

        var isObservation: Bool { log != nil }
        var counted: Bool { route != .tap && state == .live }
    }

    struct Kept {
        var newest: (id: Int, sender: Sender?)?
        var bySender: [Sender: Int] = [:]
    }

    var random: SeededRandomNumberGenerator
    let seed: UInt64
    var mailroom: Mailroom
    var subscriptions: [Subscription] = []
    var objects: [Int: any AnyObject & Sendable] = [:]
    var objectNames: [Int: String] = [:]
    var departed: [Int: WeakBox] = [:]
    var kept: [MailKind: Kept] = [:]
    var nextNumber = 0
    var nextObject = 0
    var nextID = 0
    var isClosed = false
    var trace: [String] = []
    var operations = 0

    final class WeakBox {
        weak var object: AnyObject?
        init(_ object: AnyObject) { self.object = object }
    }

    let rooms = ["lobby", "kitchen", "attic"]

    init(seed: UInt64) {
        self.seed = seed
        random = SeededRandomNumberGenerator(seed: seed)
        mailroom = Mailroom()
    }

    func log(_ line: String) {
        trace.append(line)
        if trace.count > 40 { trace.removeFirst() }
    }

    var context: Comment {
        let replay = "replay: ASYNCMAIL_MODEL_SEED=\(seed) swift test --filter Model"
        return Comment(rawValue: "seed \(seed), operation \(operations); \(replay)\n" + trace.joined(separator: "\n"))
    }

    func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }
    func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &random)] }

    func typeName(_ kind: MailKind) -> String { kind == .a ? "A" : "B" }

    func randomPolicy() -> Policy {
        switch Int.random(in: 0..<3, using: &random) {
        case 0: .unbounded
        case 1: .oldest(Int.random(in: -1...3, using: &random))
        default: .newest(Int.random(in: -1...3, using: &random))
        }
    }

    func passes(_ id: Int) -> Bool { id % 3 != 0 }

    // MARK: The model's delivery rule

    /// Offers one element to a subscription's buffer as AsyncStream would with nobody waiting.
    func offer(_ element: Seen, to subscription: Subscription) -> Receipt {
        if subscription.isObservation {
            // An observation's loop may be waiting: its buffer is unbounded, so either way it is delivered.
            subscription.expectedHandled.append(element.id)
            return Receipt(delivered: 1)
        }
        switch subscription.policy {
        case .unbounded:
            subscription.buffer.append(element)
            return Receipt(delivered: 1)
        case .oldest(let limit):
            guard limit > 0, subscription.buffer.count < limit else { return Receipt(dropped: 1) }
            subscription.buffer.append(element)
            return Receipt(delivered: 1)
        case .newest(let limit):
            guard limit > 0 else { return Receipt(dropped: 1) }
            subscription.buffer.append(element)
            guard subscription.buffer.count > limit else { return Receipt(delivered: 1) }
            subscription.buffer.removeFirst()
            return Receipt(dropped: 1)
        }
    }

    func matches(_ subscription: Subscription, kind: MailKind, sender: Sender?) -> Bool {
        guard subscription.state == .live else { return false }
        if subscription.route == .tap { return true }
        guard subscription.kind == kind else { return false }
        switch subscription.route {
        case .everyone: return true
        case .object(let object): return sender == .object(object)
        case .value(let room): return sender == .value(room)
        case .roomSenders:
            if case .value = sender { return true }
            return false
        case .tap: return true
        }
    }

    /// What one post must do: the receipt, with every buffer updated.
    func deliver(kind: MailKind, ids: [Int], sender: Sender?) -> Receipt {
        guard !isClosed else { return Receipt() }
        var receipt = Receipt()
        for id in ids {
            for subscription in subscriptions where matches(subscription, kind: kind, sender: sender) {
                if subscription.filtered, !passes(id) { continue }
                switch subscription.route {
                case .tap:
                    // Taps see every post, are never counted, and here keep only value senders or none.
                    if case .object = sender { continue }
                    var senderName: String?
                    if case .value(let room) = sender { senderName = room }
                    _ = offer(Seen(type: typeName(kind), id: id, sender: senderName), to: subscription)
                case .roomSenders:
                    guard case .value(let room) = sender else { continue }
                    receipt += offer(Seen(type: typeName(kind), id: id, sender: room), to: subscription)
                default:
                    receipt += offer(Seen(type: typeName(kind), id: id, sender: nil), to: subscription)
                }
            }
            if var keep = kept[kind] {
                keep.newest = (id, sender)
                if let sender { keep.bySender[sender] = id }
                kept[kind] = keep
            }
        }
        return receipt
    }

    func isGone(_ sender: Sender?) -> Bool {
        if case .object(let object) = sender { return objects[object] == nil }
        return false
    }

    /// The mail a replaying subscription starts with, per the model.
    func replay(kind: MailKind, route: Route) -> Int? {
        guard let keep = kept[kind] else { return nil }
        switch route {
        case .everyone:
            // The type's current value, even when its object sender is gone.
            return keep.newest?.id
        case .object(let object): return keep.bySender[.object(object)]
        case .value(let room): return keep.bySender[.value(room)]
        case .roomSenders, .tap: return nil
        }
    }

    // MARK: Operations

    func step() async throws {
        operations += 1
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<22: try await subscribe()
        case 22..<50: try await post()
        case 50..<64: try await read()
        case 64..<68: drop()
        case 68..<71: try await cancelConsumer()
        case 71..<76: newObject()
        case 76..<81: departObject()
        case 81..<83: await retain()
        case 83..<89: try await count()
        case 89..<92: try await latest()
        case 92..<96: try await observe()
        case 96..<99: try await endObservation()
        default: if chance(30) { try await closeAndVerify() }
        }
    }

    func liveObject() -> Int? {
        objects.keys.isEmpty ? nil : pick(objects.keys.sorted())
    }

    func newObject() {
        guard objects.count < 5 else { return }
        nextObject += 1
        let name = "o\(nextObject)"
        objects[nextObject] = chance(50) ? Player(name) : ModelHashableObject(name)
        objectNames[nextObject] = name
        log("new object \(name)")
    }

    func departObject() {
        guard let object = liveObject() else { return }
        log("depart \(objectNames[object]!)")
        departed[object] = WeakBox(objects[object]!)
        objects[object] = nil
        for subscription in subscriptions where subscription.route == .object(object) && subscription.state == .live {
            subscription.state = .senderGone
        }
        #expect(departed[object]?.object == nil, "the mailroom must not keep a sender alive; \(context)")
    }

    func retain() async {
        let kind = pick(MailKind.allCases)
        log("retainLatest \(typeName(kind))")
        if !isClosed, kept[kind] == nil { kept[kind] = Kept() }
        switch kind {
        case .a: await mailroom.retainLatest(MailA.self)
        case .b: await mailroom.retainLatest(MailB.self)
        }
    }

    func subscribe() async throws {
        let kind = pick(MailKind.allCases)
        let policy = randomPolicy()
        let filtered = chance(30)
        let replaying = chance(30)
        var route = Route.everyone
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<3: route = .everyone
        case 3..<6: if let object = liveObject() { route = .object(object) }
        case 6..<8: route = .value(pick(rooms))
        case 8: route = .roomSenders
        default: route = .tap
        }
        let generic = chance(50)
        nextNumber += 1
        let subscription = Subscription(
            number: nextNumber,
            kind: route == .tap ? nil : kind,
            route: route,
            policy: policy,
            filtered: filtered
        )
        let flags = [filtered ? "filtered" : "", replaying ? "replaying" : "", generic ? "generic" : ""]
        log(
            "subscribe #\(nextNumber) \(typeName(kind)) \(route) \(policy.asDescription) \(flags.joined(separator: " "))"
        )
        switch kind {
        case .a:
            subscription.reader = await makeReader(MailA.self, subscription, replaying: replaying, generic: generic)
        case .b:
            subscription.reader = await makeReader(MailB.self, subscription, replaying: replaying, generic: generic)
        }
        if isClosed {
            subscription.state = .ended
        } else if replaying, route != .tap, route != .roomSenders, let id = replay(kind: kind, route: route) {
            if !filtered || passes(id) { _ = offer(Seen(type: typeName(kind), id: id, sender: nil), to: subscription) }
        }
        subscriptions.append(subscription)
    }

    func streamPolicy<Element>(_ policy: Policy) -> AsyncStream<Element>.Continuation.BufferingPolicy {
        switch policy {
        case .unbounded: .unbounded
        case .oldest(let limit): .bufferingOldest(limit)
        case .newest(let limit): .bufferingNewest(limit)
        }
    }

    func makeReader<M: ModelMail>(
        _ type: M.Type,
        _ subscription: Subscription,
        replaying: Bool,
        generic: Bool
    ) async -> Reader {
        let name = subscription.kind.map(typeName) ?? ""
        var filter: (@Sendable (M) -> Bool)?
        if subscription.filtered { filter = { $0.id % 3 != 0 } }
        let observe: @Sendable (M) -> Seen = { Seen(type: name, id: $0.id, sender: nil) }
        switch subscription.route {
        case .everyone:
            return Reader(
                await mailroom.subscribe(
                    to: M.self,
                    bufferingPolicy: streamPolicy(subscription.policy),
                    startingWithLatest: replaying,
                    where: filter
                ),
                observe
            )
        case .object(let number):
            let object = objects[number]!
            if let hashable = object as? ModelHashableObject, generic {
                return Reader(
                    await subscribeGenerically(
                        mailroom,
                        to: M.self,
                        from: hashable,
                        bufferingPolicy: streamPolicy(subscription.policy),
                        startingWithLatest: replaying,
                        where: filter
                    ),
                    observe
                )
            }
            return Reader(
                await mailroom.subscribe(
                    to: M.self,
                    from: .only(object),
                    bufferingPolicy: streamPolicy(subscription.policy),
                    startingWithLatest: replaying,
                    where: filter
                ),
                observe
            )
        case .value(let room):
            let stream =
                generic
                ? await subscribeGenerically(
                    mailroom,
                    to: M.self,
                    from: RoomID(room),
                    bufferingPolicy: streamPolicy(subscription.policy),
                    startingWithLatest: replaying,
                    where: filter
                )
                : await mailroom.subscribe(
                    to: M.self,
                    from: .only(RoomID(room)),
                    bufferingPolicy: streamPolicy(subscription.policy),
                    startingWithLatest: replaying,
                    where: filter
                )
            return Reader(stream, observe)
        case .roomSenders:
            return Reader(
                await mailroom.subscribe(
                    to: M.self,
                    fromAny: RoomID.self,
                    bufferingPolicy: streamPolicy(subscription.policy),
                    where: filter
                )
            ) { Seen(type: name, id: $0.mail.id, sender: $0.sender.name) }
        case .tap:
            let filtered = subscription.filtered
            return Reader(
                await mailroom.tap(bufferingPolicy: streamPolicy(subscription.policy)) { posted in
                    guard posted.sender == nil || posted.sender is RoomID else { return false }
                    let id = (posted.mail as? any ModelMail)?.id ?? 0
                    return !filtered || id % 3 != 0
                }
            ) { posted in
                Seen(
                    type: posted.mail is MailA ? "A" : "B",
                    id: (posted.mail as? any ModelMail)?.id ?? -1,
                    sender: (posted.sender as? RoomID)?.name
                )
            }
        }
    }

    func post() async throws {
        let kind = pick(MailKind.allCases)
        let count = chance(20) ? Int.random(in: 2...3, using: &random) : 1
        let ids = (0..<count).map { _ in
            nextID += 1
            return nextID
        }
        let receipt: Receipt
        let expected: Receipt
        switch kind {
        case .a:
            (receipt, expected) = try await post(ids.map(MailA.init(id:)), kind: kind)
        case .b:
            (receipt, expected) = try await post(ids.map(MailB.init(id:)), kind: kind)
        }
        #expect(receipt == expected, "post of \(ids); \(context)")
    }

    func post<M: ModelMail>(_ mails: [M], kind: MailKind) async throws -> (Receipt, Receipt) {
        let ids = mails.map(\.id)
        switch Int.random(in: 0..<6, using: &random) {
        case 0:
            log("post \(typeName(kind))\(ids) without sender")
            let receipt =
                mails.count == 1 ? await mailroom.post(mails[0]) : await mailroom.post(contentsOf: mails)
            return (receipt, deliver(kind: kind, ids: ids, sender: nil))
        case 1, 2:
            guard let number = liveObject() else { return (Receipt(), Receipt()) }
            let object = objects[number]!
            let style = Int.random(in: 0..<4, using: &random)
            log("post \(typeName(kind))\(ids) from \(objectNames[number]!) style \(style)")
            let receipt: Receipt
            switch style {
            case 0: receipt = await postGenerically(mailroom, mails, from: object)
            case 1:
                // An object that is also Hashable, seen only as Hashable: still matched by identity.
                if let hashable = object as? ModelHashableObject {
                    let boxed: any Hashable & Sendable = hashable
                    receipt = await postGenerically(mailroom, mails, from: boxed)
                } else {
                    receipt = await postGenerically(mailroom, mails, from: object)
                }
            case 2: receipt = await postGenerically(mailroom, mails, from: Optional(object))
            default:
                receipt =
                    mails.count == 1
                    ? await mailroom.post(mails[0], from: object) : await mailroom.post(contentsOf: mails, from: object)
            }
            return (receipt, deliver(kind: kind, ids: ids, sender: .object(number)))
        case 3, 4:
            let room = pick(rooms)
            let style = Int.random(in: 0..<4, using: &random)
            log("post \(typeName(kind))\(ids) from \(room) style \(style)")
            let receipt: Receipt
            switch style {
            case 0: receipt = await postGenerically(mailroom, mails, from: RoomID(room))
            case 1:
                let boxed: any Hashable & Sendable = RoomID(room)
                receipt = await postGenerically(mailroom, mails, from: boxed)
            case 2: receipt = await postGenerically(mailroom, mails, from: Optional(RoomID(room)))
            default:
                receipt =
                    mails.count == 1
                    ? await mailroom.post(mails[0], from: RoomID(room))
                    : await mailroom.post(contentsOf: mails, from: RoomID(room))
            }
            return (receipt, deliver(kind: kind, ids: ids, sender: .value(room)))
        default:
            log("post \(typeName(kind))\(ids) from nil")
            let receipt = await postGenerically(mailroom, mails, from: RoomID?.none)
            return (receipt, deliver(kind: kind, ids: ids, sender: nil))
        }
    }

    func readable() -> [Subscription] {
        subscriptions.filter { $0.reader != nil && (!$0.buffer.isEmpty || $0.state == .ended) }
    }

    func read() async throws {
        let candidates = readable()
        guard !candidates.isEmpty else { return }
        let subscription = pick(candidates)
        let reader = subscription.reader!
        if subscription.buffer.isEmpty {
            log("read #\(subscription.number): expect end")
            let next = try await withTimeout { await reader.next() }
            #expect(next == nil, "#\(subscription.number) must have ended; \(context)")
            subscription.reader = nil
        } else {
            let expected = subscription.buffer.removeFirst()
            log("read #\(subscription.number): expect \(expected)")
            // Read in this task, not under `withTimeout`: its helper task would hold the stream
            // until it is torn down, and a later drop must release the stream's last reference.
            // A buffered element is handed over without suspending; were the model wrong and
            // nothing buffered, the suite's time limit cancels this read and it fails.
            let next = await reader.next()
            #expect(next == expected, "#\(subscription.number); \(context)")
        }
    }

    func drop() {
        let candidates = subscriptions.filter { $0.reader != nil }
        guard !candidates.isEmpty else { return }
        let subscription = pick(candidates)
        log("drop #\(subscription.number)")
        subscription.reader = nil
        subscription.state = .ended
        subscription.buffer = []
    }

    func cancelConsumer() async throws {
        let candidates = subscriptions.filter { $0.reader != nil && $0.state == .live }
        guard !candidates.isEmpty else { return }
        let subscription = pick(candidates)
        let reader = subscription.reader!
        subscription.reader = nil
        let buffered = subscription.buffer
        log("cancel a consumer of #\(subscription.number) after \(buffered.count)")
        // The consumer reads what is buffered, reports that it is waiting, and is then cancelled.
        let (waiting, reportWaiting) = AsyncStream.makeStream(of: Void.self)
        let count = buffered.count
        let consumer = Task {
            var seen: [Seen] = []
            for _ in 0..<count { if let next = await reader.next() { seen.append(next) } }
            reportWaiting.yield()
            while let next = await reader.next() { seen.append(next) }
            return seen
        }
        _ = try await waiting.first(1)
        consumer.cancel()
        let seen = try await withTimeout { await consumer.value }
        #expect(seen == buffered, "#\(subscription.number); \(context)")
        subscription.state = .ended
        subscription.buffer = []
    }

    func count() async throws {
        let kind = pick(MailKind.allCases)
        if chance(40) { return try await countBySender(kind) }
        let actual: Int
        switch kind {
        case .a: actual = await mailroom.subscriberCount(MailA.self)
        case .b: actual = await mailroom.subscriberCount(MailB.self)
        }
        for subscription in subscriptions where subscription.kind == kind && subscription.state == .senderGone {
            subscription.state = .ended
        }
        let expected = subscriptions.filter { $0.kind == kind && $0.counted }.count
        log("count \(typeName(kind)) = \(expected)")
        #expect(actual == expected, "subscriberCount(\(typeName(kind))); \(context)")
    }

    func countBySender(_ kind: MailKind) async throws {
        let route: Route
        let actual: Int
        if chance(50), let number = liveObject() {
            route = .object(number)
            let object = objects[number]!
            switch kind {
            case .a: actual = await mailroom.subscriberCount(MailA.self, from: .only(object))
            case .b: actual = await mailroom.subscriberCount(MailB.self, from: .only(object))
            }
        } else {
            let room = pick(rooms)
            route = .value(room)
            switch kind {
            case .a: actual = await mailroom.subscriberCount(MailA.self, from: .only(RoomID(room)))
            case .b: actual = await mailroom.subscriberCount(MailB.self, from: .only(RoomID(room)))
            }
        }
        for subscription in subscriptions where subscription.kind == kind && subscription.state == .senderGone {
            subscription.state = .ended
        }
        // The demand rule: whom a post from that sender would reach (its room, every sender, and
        // for a RoomID, the subscriptions to every RoomID sender).
        func reaches(_ subscription: Route) -> Bool {
            switch subscription {
            case .everyone: true
            case .roomSenders: if case .value = route { true } else { false }
            case .tap: false
            case .object, .value: subscription == route
            }
        }
        let expected = subscriptions.filter { $0.kind == kind && $0.counted && reaches($0.route) }.count
        log("count \(typeName(kind)) from \(route) = \(expected)")
        #expect(actual == expected, "subscriberCount(\(typeName(kind)), from: .only(\(route))); \(context)")
    }

    func latest() async throws {
        let kind = pick(MailKind.allCases)
        let keep = isClosed ? nil : kept[kind]
        if chance(50) {
            let expected = keep?.newest?.id  // the current value, whoever posted it
            let actual: Int?
            switch kind {
            case .a: actual = await mailroom.latest(MailA.self)?.id
            case .b: actual = await mailroom.latest(MailB.self)?.id
            }
            log("latest \(typeName(kind)) = \(String(describing: expected))")
            #expect(actual == expected, "latest(\(typeName(kind))); \(context)")
        } else {
            let sender: Sender
            let actual: Int?
            if chance(50), let number = liveObject() {
                sender = .object(number)
                let object = objects[number]!
                switch kind {
                case .a: actual = await mailroom.latest(MailA.self, from: .only(object))?.id
                case .b: actual = await mailroom.latest(MailB.self, from: .only(object))?.id
                }
            } else {
                let room = pick(rooms)
                sender = .value(room)
                switch kind {
                case .a: actual = await mailroom.latest(MailA.self, from: .only(RoomID(room)))?.id
                case .b: actual = await mailroom.latest(MailB.self, from: .only(RoomID(room)))?.id
                }
            }
            log("latest \(typeName(kind)) from \(sender)")
            #expect(actual == keep?.bySender[sender], "latest(\(typeName(kind)), from: .only(\(sender))); \(context)")
        }
    }

    func observe() async throws {
        let kind = pick(MailKind.allCases)
        let filtered = chance(30)
        let replaying = chance(30)
        nextNumber += 1
        let subscription = Subscription(
            number: nextNumber,
            kind: kind,
            route: .everyone,
            policy: .unbounded,
            filtered: filtered
        )
        let owner = ModelOwner()
        let log = HandledLog()
        subscription.owner = owner
        subscription.log = log
        self.log(
            "observe #\(nextNumber) \(typeName(kind))\(filtered ? " filtered" : "")\(replaying ? " replaying" : "")"
        )
        switch kind {
        case .a: subscription.observation = await observe(MailA.self, owner, log, filtered, replaying)
        case .b: subscription.observation = await observe(MailB.self, owner, log, filtered, replaying)
        }
        if isClosed {
            subscription.state = .ended
        } else if replaying, let id = replay(kind: kind, route: .everyone), !filtered || passes(id) {
            subscription.expectedHandled.append(id)
        }
        subscriptions.append(subscription)
    }

    func observe<M: ModelMail>(
        _ type: M.Type,
        _ owner: ModelOwner,
        _ log: HandledLog,
        _ filtered: Bool,
        _ replaying: Bool
    ) async -> Observation {
        var filter: (@Sendable (M) -> Bool)?
        if filtered { filter = { $0.id % 3 != 0 } }
        return await mailroom.observe(M.self, owner: owner, startingWithLatest: replaying, where: filter) { _, mail in
            log.ids.withLock { $0.append(mail.id) }
            log.report.yield()
        }
    }

    /// Waits until an observation's handler has run for everything the model expects.
    func catchUp(_ subscription: Subscription) async throws {
        let log = subscription.log!
        let expected = subscription.expectedHandled.count
        try await withTimeout {
            var iterator = log.calls.makeAsyncIterator()
            while log.ids.withLock({ $0.count }) < expected { _ = await iterator.next() }
        }
        let handled = log.ids.withLock { $0 }
        #expect(handled == subscription.expectedHandled, "observation #\(subscription.number); \(context)")
    }

    func endObservation() async throws {
        let candidates = subscriptions.filter { $0.isObservation && $0.state == .live && !$0.ownerGone }
        guard !candidates.isEmpty else { return }
        let subscription = pick(candidates)
        try await catchUp(subscription)
        if chance(50) {
            log("cancel observation #\(subscription.number)")
            subscription.observation!.cancel()
            subscription.cancelledByUs = true
            #expect(subscription.observation!.isCancelled, "\(context)")
            subscription.state = .ended
            let observation = subscription.observation!
            try await withTimeout { await observation.waitUntilEnded() }
        } else {
            // The owner goes; the observation ends at the next mail that reaches it. That mail is
            // posted alone here: a later batch would race the loop's end between its mails.
            log("release the owner of observation #\(subscription.number)")
            subscription.owner = nil
            subscription.ownerGone = true
            let kind = subscription.kind!
            repeat { nextID += 1 } while !passes(nextID)
            let receipt: Receipt
            switch kind {
            case .a: receipt = await mailroom.post(MailA(id: nextID))
            case .b: receipt = await mailroom.post(MailB(id: nextID))
            }
            log("post \(typeName(kind))[\(nextID)] without sender")
            #expect(receipt == deliver(kind: kind, ids: [nextID], sender: nil), "\(context)")
            let observation = subscription.observation!
            try await withTimeout { await observation.waitUntilEnded() }
            #expect(observation.isCancelled == false, "ended by its owner, not cancelled; \(context)")
            if !isClosed { subscription.expectedHandled.removeLast() }
            subscription.state = .ended
            let handled = subscription.log!.ids.withLock { $0 }
            #expect(handled == subscription.expectedHandled, "nothing is handled once the owner is gone; \(context)")
        }
    }

    func closeAndVerify() async throws {
        log("close")
        await mailroom.close()
        isClosed = true
        for subscription in subscriptions where subscription.state != .ended { subscription.state = .ended }
        for subscription in subscriptions {
            if let reader = subscription.reader {
                for expected in subscription.buffer {
                    let next = try await withTimeout { await reader.next() }
                    #expect(next == expected, "#\(subscription.number) after close; \(context)")
                }
                let end = try await withTimeout { await reader.next() }
                #expect(end == nil, "#\(subscription.number) must end at close; \(context)")
                subscription.reader = nil
            }
            if let observation = subscription.observation {
                try await withTimeout { await observation.waitUntilEnded() }
                if !subscription.ownerGone, !subscription.cancelledByUs {
                    let handled = subscription.log!.ids.withLock { $0 }
                    #expect(handled == subscription.expectedHandled, "observation #\(subscription.number); \(context)")
                }
                #expect(
                    observation.isCancelled == subscription.cancelledByUs,
                    "isCancelled says whether cancel() was called; #\(subscription.number); \(context)"
                )
            }
        }
        #expect(await mailroom.routeTableCount == 0, "nothing may outlive close(); \(context)")
        #expect(await mailroom.tapCount == 0, "\(context)")
        weak let closed = mailroom
        // Start again with a fresh mailroom; the old one must go away once nothing refers to it.
        subscriptions = []
        kept = [:]
        mailroom = Mailroom()
        isClosed = false
        #expect(closed == nil, "a closed mailroom with no references must be freed; \(context)")
        for (object, box) in departed {
            #expect(box.object == nil, "departed sender \(objectNames[object]!) is still alive; \(context)")
        }
    }

    func run(operations limit: Int) async throws {
        var steps = 0
        while operations < limit {
            try await step()
            // A step rarely suspends: yield now and then so the tests beside it keep a thread (Tests/README.md, rule 7).
            await cooperate(after: steps, every: 16)
            steps += 1
        }
        try await closeAndVerify()
    }
}

@Suite("Model", .tags(.model), .timeLimit(.minutes(10)))
struct ModelTests {
    @Test("random operations agree with a sequential model of every guarantee", arguments: modelSeeds)
    func agreesWithModel(seed: UInt64) async throws {
        let run = ModelRun(seed: seed)
        try await run.run(operations: operationsPerSeed)
    }
}
