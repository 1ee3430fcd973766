// Callbacks instead of loops, filters, replay of the latest mail, and a tap on everything.
import AsyncMail

struct Settings: Mail {
    let theme: String
}

struct Alert: Mail {
    let level: Int
}

/// An owner for handlers: observations end by themselves when it goes away.
actor Dashboard {
    private(set) var events: [String] = []
    func record(_ event: String) { events.append(event) }
}

let mailroom = Mailroom()
var dashboard: Dashboard? = Dashboard()
let (done, finished) = AsyncStream.makeStream(of: Void.self)

// Everything that is posted, for a log.
let log = await mailroom.tap()

// Settings are state: keep the latest, and let late observers start from it.
await mailroom.retainLatest(Settings.self)
await mailroom.post(Settings(theme: "dark"))

await mailroom.observe(Settings.self, owner: dashboard!, startingWithLatest: true) { dashboard, settings in
    await dashboard.record("theme \(settings.theme)")
}
// Only serious alerts: the filter runs at post time, so the rest never reach the handler.
await mailroom.observe(
    Alert.self,
    owner: dashboard!,
    where: { $0.level >= 3 },
    handler: { dashboard, alert in
        await dashboard.record("alert \(alert.level)")
        if alert.level == 5 { finished.yield() }
    }
)

await mailroom.post(Alert(level: 1))
await mailroom.post(Alert(level: 3))
await mailroom.post(Settings(theme: "light"))
await mailroom.post(Alert(level: 5))
for await _ in done { break }

let events = await dashboard!.events
print("dashboard saw:", events)
var logged: [String] = []
for await posted in log {
    logged.append(posted.typeName.split(separator: ".").last.map(String.init) ?? posted.typeName)
    if logged.count == 5 { break }
}
print("the log saw:", logged)
// snippet.hide
precondition(events.contains("theme dark") && events.contains("theme light"))
precondition(events.filter { $0.hasPrefix("alert") } == ["alert 3", "alert 5"])
precondition(logged == ["Settings", "Alert", "Alert", "Settings", "Alert"])
// snippet.show

// To stop earlier, keep the Observation and cancel it: no handler call starts afterwards.
let pager = Dashboard()
let pages = await mailroom.observe(Alert.self, owner: pager) { pager, alert in
    await pager.record("paged \(alert.level)")
}
pages.cancel()
await mailroom.post(Alert(level: 4))
await pages.waitUntilEnded()  // the subscription is gone and the loop has finished
let paged = await pager.events
print("cancelled:", pages.isCancelled, "paged:", paged)
// snippet.hide
precondition(pages.isCancelled && paged.isEmpty)
// snippet.show

// When the owner goes, its observations end with it: no token to keep, nothing to remove.
dashboard = nil
