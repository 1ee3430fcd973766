/// Marks posts a relay makes into its own mailroom, so that its tap leaves them out.
///
/// "No echo" has two halves, one for each direction, and this is the outbound one: mail a relay
/// received is posted with this mark, and the relay's tap filter refuses marked mail, so it is
/// never published again. The inbound half is the origin: every payload carries its relay's
/// origin, and `InboundReceiver` (in `RelayWire`) drops what carries its own, so a process never
/// receives its own mail back; except a type with fleet-wide positions, whose posts this process
/// hears only from the table (the mailroom routed them there instead of delivering them). Each half alone would leave a loop: the first a relay's own
/// notifications delivered twice, the second remote mail bounced around the fleet.
@_spi(AsyncMailRelay)
public enum RelayInbound {
    @TaskLocal public static var relay: ObjectIdentifier?
}
