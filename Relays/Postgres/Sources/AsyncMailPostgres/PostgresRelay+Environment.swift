import Foundation
import PostgresNIO

extension PostgresRelay {
    /// A connection configuration from libpq's standard environment variables, as `psql` reads them.
    ///
    /// `PGHOST` (default `127.0.0.1`), `PGPORT` (default `5432`), `PGUSER` (default `postgres`),
    /// `PGPASSWORD` and `PGDATABASE` (both optional). TLS is off: set `tls` on the result for a
    /// server that is not on this machine. A `PGPORT` that is not a port number is an error, never
    /// silently replaced by the default.
    ///
    /// ```swift
    /// let relay = try PostgresRelay(
    ///     mailroom: mailroom,
    ///     connection: try PostgresRelay.connectionFromEnvironment(),
    ///     configuration: .init(channel: try RelayChannel("orders"))
    /// )
    /// ```
    ///
    /// - Parameter environment: The variables to read; the process's environment by default.
    /// - Throws: `RelayConfigurationError.invalidEnvironmentVariable(_:value:)` for a bad `PGPORT`.
    public static func connectionFromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(RelayConfigurationError) -> PostgresConnection.Configuration {
        var port = 5432
        if let text = environment["PGPORT"] {
            guard let number = Int(text), (1...65_535).contains(number) else {
                throw .invalidEnvironmentVariable("PGPORT", value: text)
            }
            port = number
        }
        return PostgresConnection.Configuration(
            host: environment["PGHOST"] ?? "127.0.0.1",
            port: port,
            username: environment["PGUSER"] ?? "postgres",
            password: environment["PGPASSWORD"],
            database: environment["PGDATABASE"],
            tls: .disable
        )
    }
}
