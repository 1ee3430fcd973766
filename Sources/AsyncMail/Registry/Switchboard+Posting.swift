import Synchronization

extension Switchboard {
    @inlinable
    func post<M: Mail>(_ mail: M) -> Receipt {
        if DeliveryScope.isDelivering(self) { return deferPost(count: 1) { $0.post(mail) } }
        if _histories.mayKeep(M.self) { return postKeepingHistory([mail], from: Never?.none, key: .none) }
        return deliverInOrder(
            M.self,
            from: Never?.none,
            lookup: .none,
            key: { .none },
            recording: mail,
            deliver: {
                $0.deliver(mail, from: nil, context: $1)
            }
        )
    }

    /// Posts from a sender whose type is statically `Hashable`: what the `Hashable` forms of
    /// `post` and `postSynchronously` call. Its room's digest is worked out with the type's own
    /// hash, with no dynamic cast and no existential; the sender's key is built only for a post
    /// that keeps or records mail.
    @inlinable
    func post<M: Mail, H: Hashable & Sendable>(_ mail: M, fromValue sender: H) -> Receipt {
        // A class matches by identity and an `Optional` is looked through, as every sender is
        // classified (see `SenderKey`); both checks are resolved at compile time in specialised
        // code. An existential is never an `H`: an existential does not conform to `Hashable`.
        if H.self is AnyObject.Type || _isOptional(H.self) { return post(mail, from: sender) }
        if DeliveryScope.isDelivering(self) { return deferPost(count: 1) { $0.post(mail, fromValue: sender) } }
        // A key that keeps the type's `==` (see `ValueSender.matches`): a room made from it is then
        // found again with no dynamic cast.
        if _histories.mayKeep(M.self) {
            return postKeepingHistory([mail], from: sender, key: .value(ValueSender(sender)))
        }
        return deliverInOrder(
            M.self,
            from: sender,
            lookup: .value(SenderDigest(value: sender)),
            key: { .value(ValueSender(sender)) },
            recording: mail,
            deliver: {
                $0.deliver(mail, from: sender, context: $1)
            }
        )
    }

    @inlinable
    func post<M: Mail, S: Sendable>(_ mail: M, from sender: S) -> Receipt {
        if DeliveryScope.isDelivering(self) { return deferPost(count: 1) { $0.post(mail, from: sender) } }
        switch SenderKey.unwrap(sender) {
        case .asIs: return post(unwrapped: mail, from: sender)
        case .contents(let contents): return post(opened: [mail], from: contents)
        case .absent: return post(mail)
        }
    }

    /// Posts from an optional object sender: the one place the object forms of `post` and
    /// `postSynchronously` tell a sender from none.
    @inlinable
    func post<M: Mail, O: AnyObject & Sendable>(_ mail: M, fromObject sender: O?) -> Receipt {
        // A `switch`, not `guard let`: binding with `guard` copied the sender, a retain and a
        // release per post, on the slow side-table path when the sender is pinned.
        switch sender {
        case .some(let sender): post(mail, from: sender)
        case .none: post(mail)
        }
    }

    /// Posts a batch from an optional object sender, as ``post(_:fromObject:)`` posts one mail.
    @inlinable
    func post<M: Mail, O: AnyObject & Sendable>(contentsOf mails: some Sequence<M>, fromObject sender: O?) -> Receipt {
        switch sender {
        case .some(let sender): post(contentsOf: mails, from: sender)
        case .none: post(contentsOf: mails)
        }
    }

    /// Posts from a sender that ``SenderKey/unwrap(_:)`` found is of its own, concrete type.
    @inlinable
    func post<M: Mail, S: Sendable>(unwrapped mail: M, from sender: S) -> Receipt {
        if _histories.mayKeep(M.self) { return postKeepingHistory([mail], from: sender, key: SenderKey(sender)) }
        return deliverInOrder(
            M.self,
            from: sender,
            lookup: SenderKey.lookup(sender),
            key: { SenderKey(sender) },
            recording: mail,
            deliver: {
                $0.deliver(mail, from: sender, context: $1)
            }
        )
    }

    @inlinable
    func post<M: Mail>(contentsOf mails: some Sequence<M>) -> Receipt {
        let mails = Array(mails)  // read once: the last one is kept for replay
        if DeliveryScope.isDelivering(self) {
            return deferPost(count: mails.count) { $0.post(contentsOf: mails) }
        }
        if _histories.mayKeep(M.self) { return postKeepingHistory(mails, from: Never?.none, key: .none) }
        return deliverInOrder(
            M.self,
            from: Never?.none,
            lookup: .none,
            key: { .none },
            recording: mails.last,
            mails: mails.count,
            deliver: {
                $0.deliver(contentsOf: mails, from: nil, context: $1)
            }
        )
    }

    @inlinable
    func post<M: Mail, S: Sendable>(contentsOf mails: some Sequence<M>, from sender: S) -> Receipt {
        let mails = Array(mails)  // read once: the last one is kept for replay
        if DeliveryScope.isDelivering(self) {
            return deferPost(count: mails.count) { $0.post(contentsOf: mails, from: sender) }
        }
        switch SenderKey.unwrap(sender) {
        case .asIs: return post(unwrappedContentsOf: mails, from: sender)
        case .contents(let contents): return post(opened: mails, from: contents)
        case .absent: return post(contentsOf: mails)
        }
    }

    /// Defers a post made while this thread delivers another post of this mailroom (from a
    /// filter, or from the deinit of a mail released during delivery): it runs as an ordinary
    /// post once that delivery is over (see ``DeferredPosts``), and its receipt counts its mail
    /// as deferred.
    @usableFromInline
    func deferPost(count: Int, _ post: @escaping @Sendable (Switchboard) -> Receipt) -> Receipt {
        _deferred.add { [self] in _ = post(self) }
        return Receipt(deferred: count)
    }

    /// Posts a batch from a sender that ``SenderKey/unwrap(_:)`` found is of its own, concrete type.
    @inlinable
    func post<M: Mail, S: Sendable>(unwrappedContentsOf mails: [M], from sender: S) -> Receipt {
        if _histories.mayKeep(M.self) { return postKeepingHistory(mails, from: sender, key: SenderKey(sender)) }
        return deliverInOrder(
            M.self,
            from: sender,
            lookup: SenderKey.lookup(sender),
            key: { SenderKey(sender) },
            recording: mails.last,
            mails: mails.count,
            deliver: {
                $0.deliver(contentsOf: mails, from: sender, context: $1)
            }
        )
    }

    /// Posts mail from a sender that the post site saw only inside an existential box or an
    /// `Optional`: routes look inside, so the sender reaches exactly the subscriptions it would
    /// reach posted as its own type. It takes the batch form's steps, with the sender as an
    /// `any Sendable` that is classified at run time.
    @usableFromInline
    func post<M: Mail>(opened mails: [M], from sender: any Sendable) -> Receipt {
        post(unwrappedContentsOf: mails, from: sender)
    }

    /// One post: captures its recipients and lanes, delivers to them holding the lanes, then,
    /// holding nothing, finishes departed senders' streams and releases what the post let go of
    /// (the snapshot, which may hold the last reference to a subscription, and replaced kept mail).
    ///
    /// `lookup` is where the room is looked for; `key` makes the sender's key, called only by a
    /// post that records its type's latest mail.
    ///
    /// With instrumentation, the post goes the same way in ``deliverInOrder(_:from:lookup:key:recording:mails:reportingTo:deliver:)``,
    /// kept out of line so that a post without instrumentation pays one check for it; without,
    /// `deliver` gets no context.
    @inlinable @inline(__always)
    func deliverInOrder<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        lookup: SenderKey.RoomLookup,
        key: () -> SenderKey,
        recording last: M?,
        mails: Int = 1,
        deliver: (Recipients<M, S>, PostContext?) -> Receipt
    ) -> Receipt {
        if let _instrumentation {
            return deliverInOrder(
                M.self,
                from: sender,
                lookup: lookup,
                key: key,
                recording: last,
                mails: mails,
                reportingTo: _instrumentation,
                deliver: deliver
            )
        }
        let (receipt, departed) = deliverCaptured(
            M.self,
            from: sender,
            lookup: lookup,
            key: key,
            recording: last,
            context: nil,
            deliver: deliver
        )
        for continuation in departed { continuation.finish() }
        _deferred.run()  // posts this post's filters made, now that its lanes are free
        return receipt
    }

    /// One post under instrumentation: the poster's context is captured before the capture and
    /// handed to `deliver`, and the receipt is reported once the lanes are released.
    @inlinable @inline(never)
    func deliverInOrder<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        lookup: SenderKey.RoomLookup,
        key: () -> SenderKey,
        recording last: M?,
        mails: Int,
        reportingTo instrumentation: any MailroomInstrumentation,
        deliver: (Recipients<M, S>, PostContext?) -> Receipt
    ) -> Receipt {
        let context = instrumentation.currentContext()
        let (receipt, departed) = deliverCaptured(
            M.self,
            from: sender,
            lookup: lookup,
            key: key,
            recording: last,
            context: context,
            deliver: deliver
        )
        for continuation in departed { continuation.finish() }
        instrumentation.didPost(M.self, mails: mails, receipt: receipt)
        _deferred.run()
        return receipt
    }

    /// Captures who a post must reach and the lanes it holds while it yields, and delivers to
    /// them holding those lanes; returns the receipt and the streams of departed senders the
    /// post's sweep found, for the caller to finish holding nothing.
    ///
    /// The type's table is found with no lock (``TypeMap``), and the recipients are captured
    /// holding only the lock of the shard the post's room falls in: nothing else a post to
    /// another room or type takes. Recipients are captured before the lanes are taken, and the
    /// post checks, holding them, that nothing was filed where it looked since (the shard's
    /// filing count) and that nobody began to tap: a post that took its lanes after a post that
    /// saw a new subscription must reach it too, or the subscription would hear the later post
    /// and miss the earlier. Then, rarely, it goes the way of a post that keeps its latest mail,
    /// which captures holding its lanes (``deliverRecording(_:from:key:recording:context:deliver:)``).
    /// The lanes order the check after every filing an earlier post in them saw: the earlier
    /// post's capture, under the shard's lock, followed the filing, and its release of the lanes
    /// precedes this post's taking them.
    @inlinable @inline(__always)
    func deliverCaptured<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        lookup: SenderKey.RoomLookup,
        key: () -> SenderKey,
        recording last: M?,
        context: PostContext?,
        deliver: (Recipients<M, S>, PostContext?) -> Receipt
    ) -> (receipt: Receipt, departed: [any Finishable]) {
        var departed: [any Finishable] = []
        // The table is not handed out of the closure: that would retain it, a write to one cache
        // line that every post of the type, whatever its room, would then share.
        let attempt: CapturedPost = withTable(of: M.self, absent: .noTable) { table in
            departed = table.sweepAfterPost()
            return table.withShard(RouteTable<M>.shardIndex(lookup)) { shard in
                var recipients = Recipients<M, S>()
                var lanes = Lanes()
                var check = RoomCheck<M>.none
                let filings = shard.withLock { () -> UInt? in
                    // Retired: nothing to capture, and nothing will be filed here again.
                    guard !table.isRetired else { return shard._filings.load(ordering: .relaxed) }
                    if last != nil, table._keepsLatest { return nil }
                    table.capture(
                        from: sender,
                        room: lookup,
                        in: shard,
                        into: &recipients,
                        lanes: &lanes,
                        check: &check
                    )
                    return shard._filings.load(ordering: .relaxed)
                }
                guard let filings else { return .again }  // it keeps its latest mail
                // Outside the lock: is the room found the sender's? (See `RoomCheck`.)
                if !check.holds(for: sender, lookup: lookup) {
                    recipients._pinned = nil
                    lanes = lanes.withoutRoom
                }
                recipients._taps = taps
                let attempt = inOrder(lanes) { () -> CapturedPost in
                    guard shard._filings.load(ordering: .relaxed) == filings,
                        recipients._taps != nil || !_tapping.load(ordering: .relaxed)
                    else { return .again }
                    return .delivered(deliver(recipients, context))
                }
                _ = recipients  // the snapshot may hold the last reference to a subscription: released here
                return attempt
            }
        }
        switch attempt {
        case .delivered(let receipt):
            return (receipt, departed)
        case .noTable:
            // Nobody ever subscribed to the type: only the taps hear it.
            var recipients = Recipients<M, S>()
            recipients._taps = taps
            return (inOrder(Lanes()) { deliver(recipients, context) }, departed)
        case .again:
            guard let table = existingTable(for: M.self) else { return (Receipt(), departed) }
            let receipt = deliverRecording(
                table,
                from: sender,
                key: key(),
                recording: last,
                context: context,
                deliver: deliver
            )
            return (receipt, departed)
        }
    }

    /// A post of a type that keeps its latest mail, or one whose capture went stale while it
    /// waited for its lanes: through ``inPostLanes(of:from:key:firstLook:beforeLanes:secondLook:deliver:)``,
    /// it records its mail as the latest (if it keeps any) and captures its recipients in one
    /// step under its shard's lock, holding the lanes it delivers in.
    ///
    /// So a replaying subscribe (which reads the kept mail holding one of the post's lanes) can
    /// never replay a mail that a post delivered after it overtakes: every subscriber, the
    /// replaying one too, hears the posts of one lane in one order.
    @inlinable @inline(never)
    func deliverRecording<M: Mail, S: Sendable>(
        _ table: RouteTable<M>,
        from sender: S?,
        key: SenderKey,
        recording mail: M?,
        context: PostContext?,
        deliver: (Recipients<M, S>, PostContext?) -> Receipt
    ) -> Receipt {
        var discarded = DiscardedMail<M>()
        let receipt = inPostLanes(
            of: table,
            from: sender,
            key: key,
            secondLook: { shard, _ -> LaneAttempt<Void> in
                if let mail { table.recordLatest(mail, key: key, in: shard, discarding: &discarded) }
                return .done(())
            },
            deliver: { recipients in deliver(recipients, context) }
        )
        discarded.release(in: table)
        return receipt ?? Receipt()  // retired: the mailroom closed
    }
}
