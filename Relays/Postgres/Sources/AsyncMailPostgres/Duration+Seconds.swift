extension Duration {
    /// The duration in seconds, for `make_interval(secs => …)`.
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
