@_spi(AsyncMailRelay) import RelayWire
import Testing

// Every engine's run, as a value: the order of a graceful stop, a failure's, and a shutdown asked
// for while the store opens. No threads, no I/O; the runner that does the actions is
// `RelayRunner`, which every engine suite and the contract suite run.
@Suite("A relay's run, every engine's")
struct RelayLifecycleMachineTests {
    private struct Refused: Error {}

    @Test("graceful: stop admitting, close the queue once forwarded, stop readers once published, close, finish")
    func graceful() {
        var machine = RelayLifecycleMachine()
        #expect(machine.state == .opening)
        #expect(machine.opened(readers: 2) == [.startRunning])
        #expect(machine.state == .running)
        #expect(machine.shutdownRequested() == [.beginShutdown])
        #expect(machine.state == .draining)
        #expect(machine.shutdownRequested().isEmpty, "asked twice, done once")
        #expect(machine.forwardingEnded() == [.closeQueue])
        #expect(machine.publisherEnded() == [.stopReaders])
        #expect(machine.state == .stoppingReaders)
        #expect(machine.readerEnded().isEmpty)
        #expect(machine.readerEnded() == [.close])
        #expect(machine.state == .closing)
        #expect(machine.closed() == [.finish])
        #expect(machine.state == .finished)
        #expect(machine.failure == nil)
    }

    @Test("everything forwarded already: forwarding is stopped, for no more mail will wake it")
    func allForwarded() {
        var machine = RelayLifecycleMachine()
        _ = machine.opened(readers: 1)
        #expect(machine.shutdownRequested() == [.beginShutdown])
        #expect(machine.allForwarded() == [.stopForwarding])
        #expect(machine.allForwarded().isEmpty)
        #expect(machine.forwardingEnded() == [.closeQueue])
    }

    @Test("the mailroom closed first: posts end, forwarding ends, and the shutdown closes the queue at once")
    func mailroomClosedFirst() {
        var machine = RelayLifecycleMachine()
        _ = machine.opened(readers: 1)
        #expect(machine.mailroomClosed() == [.endPosts])
        #expect(machine.mailroomClosed().isEmpty)
        #expect(machine.forwardingEnded().isEmpty, "still running: the readers go on")
        #expect(machine.allForwarded().isEmpty)
        #expect(machine.shutdownRequested() == [.beginShutdown, .closeQueue])
        #expect(machine.publisherEnded() == [.stopReaders])
        #expect(machine.readerEnded() == [.close])
        #expect(machine.closed() == [.finish])
    }

    @Test("a shutdown while the store opens waits for it: what was posted before is still published")
    func shutdownWhileOpening() {
        var machine = RelayLifecycleMachine()
        #expect(machine.shutdownRequested().isEmpty)
        #expect(machine.forwardingEnded().isEmpty, "the queue stays open until the store is")
        #expect(machine.opened(readers: 1) == [.startRunning, .beginShutdown, .closeQueue])
        #expect(machine.publisherEnded() == [.stopReaders])
        #expect(machine.readerEnded() == [.close])
        #expect(machine.closed() == [.finish])
    }

    @Test("the open failed: forwarding stops, nothing is closed, and the run throws the open's error")
    func openFailed() {
        var machine = RelayLifecycleMachine()
        #expect(machine.openFailed(Refused()) == [.stopForwarding])
        #expect(machine.state == .closing)
        #expect(machine.shutdownRequested().isEmpty)
        #expect(machine.opened(readers: 1).isEmpty, "an open that failed never opens")
        #expect(machine.forwardingEnded() == [.closeQueue, .finish])
        #expect(machine.failure is Refused)
    }

    @Test("a reader gives up: forwarding and the publisher stop at once, then the others stop, then close")
    func readerFails() {
        var machine = RelayLifecycleMachine()
        _ = machine.opened(readers: 3)
        #expect(machine.readerEnded(failing: Refused()) == [.stopForwarding, .stopPublisher])
        #expect(machine.failure is Refused)
        #expect(machine.forwardingEnded() == [.closeQueue])
        #expect(machine.publisherEnded() == [.stopReaders])
        #expect(machine.readerEnded().isEmpty)
        #expect(machine.readerEnded() == [.close])
        #expect(machine.closed() == [.finish])
        #expect(machine.failure is Refused, "the first failure is what the run throws")
    }

    @Test("a failure while draining stops what is left at once, and wins over the graceful stop")
    func failureWhileDraining() {
        var machine = RelayLifecycleMachine()
        _ = machine.opened(readers: 1)
        _ = machine.shutdownRequested()
        #expect(machine.forwardingEnded() == [.closeQueue])
        #expect(machine.readerEnded(failing: Refused()) == [.stopPublisher])
        #expect(machine.publisherEnded() == [.close], "no reader left to stop")
        #expect(machine.closed() == [.finish])
        #expect(machine.failure is Refused)
    }

    @Test("a reader that ends on its own while running changes nothing until the stop")
    func readerEndsEarly() {
        var machine = RelayLifecycleMachine()
        _ = machine.opened(readers: 2)
        #expect(machine.readerEnded().isEmpty)
        #expect(machine.state == .running)
        _ = machine.shutdownRequested()
        _ = machine.forwardingEnded()
        #expect(machine.publisherEnded() == [.stopReaders])
        #expect(machine.readerEnded() == [.close])
    }
}
