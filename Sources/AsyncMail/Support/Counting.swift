/// `count` with its noun in the right number: "1 mail", "2 mails", "0 mails". Every message that
/// states a count says it this way, in the core and in the relays.
@_spi(AsyncMailInternal) public func counting(_ count: Int, _ singular: String, plural: String? = nil) -> String {
    "\(count) " + (count == 1 ? singular : plural ?? singular + "s")
}
