extension Mailroom {
    /// A registered close action; pass it to ``cancelCloseAction(_:)`` to forget the action.
    package struct CloseAction: Sendable, Hashable {
        let key: Int
    }

    /// Runs `action` once, synchronously inside ``close()`` (or the mailroom's deinit), after every
    /// stream has finished and with no lock held.
    ///
    /// For companions that must stop exactly when the mailroom closes, such as the
    /// NotificationCenter bridge, which removes its observer before `close()` returns.
    ///
    /// - Returns: A handle to cancel it with, or `nil` when the mailroom is already closed, in
    ///   which case `action` is not run.
    package nonisolated func onClose(_ action: @escaping @Sendable () -> Void) -> CloseAction? {
        _switchboard.addCloseAction(action).map(CloseAction.init(key:))
    }

    /// Forgets a close action that has not run yet; does nothing once it has.
    package nonisolated func cancelCloseAction(_ action: CloseAction) {
        _switchboard.removeCloseAction(action.key)
    }
}
