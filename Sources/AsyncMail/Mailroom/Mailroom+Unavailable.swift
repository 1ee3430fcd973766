// Calls that cannot mean what they seem to. A sender is an object (matched by identity) or a
// `Hashable` value (matched by equality), so the available forms reject everything else; these
// are the only candidates left for such a call, and turn a list of unmet constraints into an
// explanation. A metatype once compiled here, as the sender value `Player.self`, which no
// subscription to `.only(player)` or `fromAny: Player.self` heard.
extension Mailroom {
    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: post from the sender itself (a player, not Player.self)"
    )
    @discardableResult
    public nonisolated(nonsending) func post<M: Mail, S>(_ mail: M, from senderType: S.Type) async -> Receipt {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender is an object or a Hashable value: make it Hashable, or give the variable the type 'any Hashable & Sendable' or 'any AnyObject & Sendable'"
    )
    @discardableResult @_disfavoredOverload
    public nonisolated(nonsending) func post<M: Mail, S: Sendable>(_ mail: M, from sender: S) async -> Receipt {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: post from the sender itself (a player, not Player.self)"
    )
    @discardableResult
    public nonisolated(nonsending) func post<M: Mail, S>(
        contentsOf mails: some Sequence<M> & Sendable,
        from senderType: S.Type
    ) async -> Receipt {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender is an object or a Hashable value: make it Hashable, or give the variable the type 'any Hashable & Sendable' or 'any AnyObject & Sendable'"
    )
    @discardableResult @_disfavoredOverload
    public nonisolated(nonsending) func post<M: Mail, S: Sendable>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: S
    ) async -> Receipt {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: post from the sender itself (a player, not Player.self)"
    )
    @discardableResult
    public nonisolated func postSynchronously<M: Mail, S>(_ mail: M, from senderType: S.Type) -> Receipt {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender is an object or a Hashable value: make it Hashable, or give the variable the type 'any Hashable & Sendable' or 'any AnyObject & Sendable'"
    )
    @discardableResult @_disfavoredOverload
    public nonisolated func postSynchronously<M: Mail, S: Sendable>(_ mail: M, from sender: S) -> Receipt {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message: "a sender type is not a sender: post from the sender itself (a player, not Player.self)"
    )
    @discardableResult
    public nonisolated func postSynchronously<M: Mail, S>(
        contentsOf mails: some Sequence<M> & Sendable,
        from senderType: S.Type
    ) -> Receipt {
        fatalError("unavailable")
    }

    @available(
        *,
        unavailable,
        message:
            "a sender is an object or a Hashable value: make it Hashable, or give the variable the type 'any Hashable & Sendable' or 'any AnyObject & Sendable'"
    )
    @discardableResult @_disfavoredOverload
    public nonisolated func postSynchronously<M: Mail, S: Sendable>(
        contentsOf mails: some Sequence<M> & Sendable,
        from sender: S
    ) -> Receipt {
        fatalError("unavailable")
    }
}
