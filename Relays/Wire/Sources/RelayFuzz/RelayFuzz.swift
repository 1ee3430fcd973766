// libFuzzer's target for the relay's inbound path: decoding, validation and the per-origin
// accounting, with and without a signing key. Built by Scripts/fuzz-relay.sh with
// `-sanitize=fuzzer,address -DFUZZING`; without FUZZING it is a plain program that replays the
// inputs named on its command line (a crash the fuzzer saved, say).
// Presence rows are fuzzed beside them: a payload starting with `@` is one (see checkPresence).
//
// An input is payloads separated by newlines. A payload starting with `@` is a presence row's
// columns, separated by tabs. A payload starting with `!` advances the ledger's
// clock instead; a spill notice is answered with the next payload as its row.
import AsyncMail
import Foundation
@_spi(AsyncMailRelay) import RelayWire

struct Line: Mail, Codable {
    let text: String
}

struct Room: Hashable, Sendable, Codable {
    let name: String
}

let registry: WireRegistry = {
    let registry = WireRegistry()
    try! registry.register(Line.self, as: "chat.line")
    try! registry.register(sender: Room.self, as: "room")
    return registry
}()

/// A stand-in for HMAC: enough to exercise both paths of verification.
let signer = PayloadSigner(
    code: { message in Data(repeating: UInt8(truncatingIfNeeded: message.count), count: 32) },
    isValid: { code, message in code == Data(repeating: UInt8(truncatingIfNeeded: message.count), count: 32) }
)

/// Feeds one input through a fresh receiver and checks what every answer promises.
func run(_ input: Data) {
    let signed = input.first.map { $0 & 1 == 1 } ?? false
    let receiver = InboundReceiver(registry: registry, signer: signed ? signer : nil, ownOrigin: "self", forgetAfter: 2)
    var payloads = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)[...]
    while let bytes = payloads.popFirst() {
        if bytes.first == UInt8(ascii: "!") {
            receiver.tick()
            continue
        }
        if bytes.first == UInt8(ascii: "@") {
            checkPresence(bytes.dropFirst(), signed: signed)
            continue
        }
        var action = receiver.receive(String(decoding: bytes, as: UTF8.self))
        check(action)
        if case .readSpilled(let notice) = action {
            let row = payloads.popFirst().map { String(decoding: $0, as: UTF8.self) }
            action = receiver.receiveSpilled(row, for: notice)
            if case .readSpilled = action { fatalError("a row was taken for another spill notice") }
            check(action)
        }
        precondition(receiver.rememberedOrigins <= 10_000, "the ledger outgrew its bound")
    }
}

/// A presence row: its columns separated by tabs, a column left out when missing. Whatever the
/// row, decoding answers, and an accepted row keeps every bound.
func checkPresence(_ bytes: Data.SubSequence, signed: Bool) {
    let fields = bytes.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    func field(_ index: Int) -> String? { index < fields.count ? fields[index] : nil }
    let columns = PresenceRecord.Columns(
        topic: field(0),
        key: field(1),
        instance: field(2),
        meta: field(3),
        signature: field(4)
    )
    guard case .success(let record) = PresenceRecord.decode(columns, channel: "chat", signer: signed ? signer : nil)
    else { return }
    precondition(PresenceRecord.problem(with: record.topic, as: "topic") == nil, "an accepted topic out of bounds")
    precondition(PresenceRecord.problem(with: record.key, as: "key") == nil, "an accepted key out of bounds")
    precondition(record.instance.utf8.count <= PresenceRecord.maximumInstanceBytes, "an accepted instance too long")
    precondition(PresenceRecord.problem(with: record.meta) == nil, "accepted metadata too large")
}

func check(_ action: InboundReceiver.Action) {
    if let broken = action.brokenPromise { fatalError(broken) }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    run(Data(bytes: start, count: count))
    return 0
}
#else
@main
struct Replay {
    static func main() throws {
        for path in CommandLine.arguments.dropFirst() {
            run(try Data(contentsOf: URL(fileURLWithPath: path)))
            print("ok: \(path)")
        }
    }
}
#endif
