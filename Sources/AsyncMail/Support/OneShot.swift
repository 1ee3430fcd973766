import Synchronization

/// A value set once, and awaited by any number of tasks: the first ``resolve(_:)`` wins.
///
/// For AsyncMail's own products (the bridge, the relay) and the core, which each needed a one-shot
/// latch and had written three; not part of the public API.
@_spi(AsyncMailInternal)
public final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, Never>])
        case resolved(Value)
    }

    private let state = Locked<State>(.waiting([]))

    public init() {}

    /// The value, once resolved.
    public var value: Value? {
        state.withLock { state in
            guard case .resolved(let value) = state else { return nil }
            return value
        }
    }

    /// Sets the value unless it is set already, and wakes every waiter; true when this call set it.
    @discardableResult
    public func resolve(_ value: Value) -> Bool {
        let woken: [CheckedContinuation<Value, Never>]? = state.withLock { state in
            switch state {
            case .resolved:
                return nil
            case .waiting(let waiting):
                state = .resolved(value)
                return waiting
            }
        }
        guard let woken else { return false }
        for continuation in woken { continuation.resume(returning: value) }
        return true
    }

    /// Waits until the value is set, and returns it. Not cancellable: resolve it to end the wait.
    public func wait() async -> Value {
        await withCheckedContinuation { continuation in
            let value: Value? = state.withLock { state in
                switch state {
                case .resolved(let value):
                    return value
                case .waiting(var waiting):
                    waiting.append(continuation)
                    state = .waiting(waiting)
                    return nil
                }
            }
            if let value { continuation.resume(returning: value) }
        }
    }
}
