@_spi(AsyncMailInternal) import AsyncMail
import Foundation
import Logging
import PostgresNIO
@_spi(AsyncMailRelay) import RelayWire

extension PostgresRelay {
    /// Encodes tapped mail of registered types and queues it, a batch as one post, until a
    /// graceful shutdown or cancellation; queues each flush's marker behind the mail posted
    /// before it.
    func forward(_ tap: AsyncStream<PostedMail>) async {
        let mailLimit = configuration.maximumMailBytes
        let postLimit = max(configuration.maximumPostBytes, mailLimit)
        var pending: OutboundPost?
        var pendingMails = 0  // every mail of the post in progress, sent or not
        var tooLarge = false  // the post in progress outgrew `postLimit`: it stays local, whole
        let encoder = JSONEncoder()  // one for the loop's life: making one per mail costs more than encoding
        for await posted in tap {
            pendingMails += 1
            do {
                if let (encoded, bytes) = try registry.encode(posted, with: encoder) {
                    if bytes + encoded.overheadBytes > mailLimit {
                        gate.lose(1)
                        report(.oversize(type: encoded.type, bytes: bytes)) { $0.oversize.addSaturating(1) }
                    } else if tooLarge || (pending?.mailBytes ?? 0) + bytes + encoded.overheadBytes > postLimit {
                        tooLarge = true
                        pending = nil
                    } else if pending == nil {
                        // The post's first mail: its context is the whole post's.
                        var encoded = encoded
                        encoded.context = posted.context
                        encoded.trace = RelayTracing.trace(of: posted.context)
                        pending = encoded
                    } else {
                        pending?.append(encoded)
                    }
                }
            } catch {
                gate.lose(1)
                report(.publishFailed(reason: "encoding failed: \(error)", mails: 1)) { $0.publishFailures += 1 }
            }
            if posted.isLastInPost {
                if tooLarge {
                    gate.lose(pendingMails)
                    let type = registry.mailCodec(for: posted.mailType)?.name ?? posted.typeName
                    report(.oversize(type: type, bytes: postLimit)) { $0.oversize.addSaturating(pendingMails) }
                } else if var post = pending {
                    post.queuedAt = .now
                    if queue.append(.post(post)) {
                        count { $0.queued += post.mails.count }
                    } else {
                        gate.lose(post.mails.count)
                        report(.queueOverflow(posts: 1)) { $0.queueOverflow += 1 }
                    }
                }
                pending = nil
                pendingMails = 0
                tooLarge = false
            }
            let progress = gate.forwardedOne()
            if progress.refusedPosts > 0 {
                report(.queueOverflow(posts: progress.refusedPosts)) { $0.queueOverflow += progress.refusedPosts }
            }
            for ticket in progress.matured where !queue.append(.flush(ticket)) { ticket.resolve(.notRunning) }
            if progress.isDone { return }  // shutting down, and all is forwarded
        }
    }

    /// Ephemeral mode: queues a heartbeat every interval until the queue closes.
    func beat() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: configuration.heartbeatInterval) } catch { return }
            guard queue.append(.heartbeat) else { return }
        }
    }
}
