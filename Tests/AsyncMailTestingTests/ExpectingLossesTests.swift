import AsyncMail
import AsyncMailTesting
import Testing

@Suite("expectMail with a dropping backlog: a test can expect a loss")
struct ExpectingLossesTests {
    @Test("the mails and the loss, in order, once every mail posted is accounted for")
    func expectsALoss() async {
        let mailroom = Mailroom()
        let heard = await mailroom.expectMail(Ping.self, count: 5, backlog: .droppingOldest(past: 2)) {
            for id in 1...5 { await mailroom.post(Ping(id: id)) }
        }
        #expect(heard == [.lost(MailLoss(code: .dropped, count: 3)), .mail(Ping(id: 4)), .mail(Ping(id: 5))])
    }

    @Test("too few accounted for, or more posted than expected: one issue each, saying what arrived")
    func issues() async {
        let mailroom = Mailroom()
        let short = await recordedIssues {
            await mailroom.expectMail(
                Ping.self,
                count: 3,
                backlog: .droppingNewest(past: 1),
                within: .milliseconds(200)
            ) {
                await mailroom.post(Ping(id: 1))
            }
        }
        #expect(short.count == 1)
        #expect(short.first.map { "\($0)".contains("expected 3 Ping") } == true)
        let over = await recordedIssues {
            await mailroom.expectMail(Ping.self, count: 1, backlog: .droppingNewest(past: 1)) {
                await mailroom.post(contentsOf: [Ping(id: 1), Ping(id: 2)])
            }
        }
        #expect(over.count == 1)
        #expect(over.first.map { "\($0)".contains("2 were posted") } == true)
    }
}
