/// Objects of one kind by type, read with no lock: a ``TypeMap`` that the products built on the
/// core can name, as ``Guarded`` is a ``Locked`` they can name.
///
/// AsyncMailObservability keeps each mail type's metrics in one, so posts of different types
/// share no lock on their way to their counters. An object stays until the index goes: keep one
/// per type that a program bounds. SPI, not part of AsyncMail's API.
@_spi(AsyncMailInternal)
public final class TypeIndex<Object: AnyObject & Sendable>: Sendable {
    @usableFromInline let _map = TypeMap()

    public init() {}

    /// The object filed for `type`, if any; reads with no lock.
    @inlinable
    public func object(for type: Any.Type) -> Object? {
        _map.object(for: ObjectIdentifier(type), as: Object.self)
    }

    /// The object filed for `type`, or `make()`'s, filed now; the first filed wins. `make` runs
    /// holding the index's lock: make anything that runs user code before calling this.
    public func object(for type: Any.Type, orFile make: () -> Object) -> Object {
        _map.object(for: ObjectIdentifier(type), as: Object.self, orFile: make)
    }
}
