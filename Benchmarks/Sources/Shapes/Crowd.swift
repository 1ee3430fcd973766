import AsyncMail

/// Ten thousand subscriptions that a post must not pay for, of one kind.
public enum Crowd: String, CaseIterable, Sendable {
    /// Subscriptions to other mail types.
    case types
    /// Subscriptions to `Beat` pinned to other `Hashable` sender values.
    case values
    /// Subscriptions to `Beat` pinned to other objects.
    case objects

    /// The name of the post-cost shape beside this crowd, the same in every report.
    public var besideShape: String {
        switch self {
        case .types: "PostCost/10k other types"
        case .values: "PostCost/10k other value senders"
        case .objects: "PostCost/10k other object senders"
        }
    }

    /// The name of the same post without the crowd: the baseline of ``besideShape``.
    public var aloneShape: String {
        switch self {
        case .types: "PostCost/alone"
        case .values: "PostCost/pinned alone"
        case .objects: "PostCost/object alone"
        }
    }

    /// Subscribes ``crowdSize`` bystanders of this kind on `mailroom`; keep the result alive
    /// for as long as they should stay subscribed.
    public nonisolated(nonsending) func gather(on mailroom: Mailroom) async -> [any Sendable] {
        var kept: [any Sendable] = []
        kept.reserveCapacity(crowdSize * 2)
        for number in 0..<crowdSize {
            switch self {
            case .types:
                kept.append(await subscribeToOther(Beat.self, bits: number, depth: 14, on: mailroom))
            case .values:
                kept.append(await mailroom.subscribe(to: Beat.self, from: .only(Room(number: number))))
            case .objects:
                let other = Poster()
                kept.append(other)
                kept.append(await mailroom.subscribe(to: Beat.self, from: .only(other)))
            }
        }
        return kept
    }
}

/// Subscribes to the distinct mail type that `bits` names, `depth` wrappers deep.
nonisolated(nonsending) func subscribeToOther<T: Mail>(
    _ base: T.Type,
    bits: Int,
    depth: Int,
    on mailroom: Mailroom
) async -> any Sendable {
    if depth == 0 { return await mailroom.subscribe(to: T.self) }
    return bits & 1 == 0
        ? await subscribeToOther(Zero<T>.self, bits: bits >> 1, depth: depth - 1, on: mailroom)
        : await subscribeToOther(One<T>.self, bits: bits >> 1, depth: depth - 1, on: mailroom)
}
