// libFuzzer's target for the relay's inbound path: decoding, validation and the per-origin
// accounting, with and without a signing key. Built by Scripts/fuzz-relay.sh with
// `-sanitize=fuzzer,address -DFUZZING`; without FUZZING it is a plain program that replays the
// inputs named on its command line (a crash the fuzzer saved, say).
//
// An input is payloads separated by newlines. A payload starting with `!` advances the ledger's
// clock instead; a spill notice is answered with the next payload as its row.
import AsyncMail
import Foundation
import RelayWire

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
