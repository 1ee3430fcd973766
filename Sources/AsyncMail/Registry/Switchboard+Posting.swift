extension Switchboard {
    @inlinable
    func post<M: Mail>(_ mail: M) -> Receipt {
        if DeliveryScope.isDelivering(self) { return deferPost(count: 1) { $0.post(mail) } }
        if _histories.mayKeep(M.self), let history = _histories.history(for: M.self) {
            return postKeepingHistory(history, [mail], from: Never?.none, key: .none)
        }
        return deliverInOrder(M.self, from: Never?.none, key: .none, recording: mail) {
            $0.deliver(mail, from: nil, context: $1)
        }
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
        let key = SenderKey(sender)
        if _histories.mayKeep(M.self), let history = _histories.history(for: M.self) {
            return postKeepingHistory(history, [mail], from: sender, key: key)
        }
        return deliverInOrder(M.self, from: sender, key: key, recording: mail) {
            $0.deliver(mail, from: sender, context: $1)
        }
    }

    @inlinable
    func post<M: Mail>(contentsOf mails: some Sequence<M>) -> Receipt {
        let mails = Array(mails)  // read once: the last one is kept for replay
        if DeliveryScope.isDelivering(self) {
            return deferPost(count: mails.count) { $0.post(contentsOf: mails) }
        }
        if _histories.mayKeep(M.self), let history = _histories.history(for: M.self) {
            return postKeepingHistory(history, mails, from: Never?.none, key: .none)
        }
        return deliverInOrder(M.self, from: Never?.none, key: .none, recording: mails.last, mails: mails.count) {
            $0.deliver(contentsOf: mails, from: nil, context: $1)
        }
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
        if _histories.mayKeep(M.self), let history = _histories.history(for: M.self) {
            return postKeepingHistory(history, mails, from: sender, key: SenderKey(sender))
        }
        return deliverInOrder(M.self, from: sender, key: SenderKey(sender), recording: mails.last, mails: mails.count) {
            $0.deliver(contentsOf: mails, from: sender, context: $1)
        }
    }

    /// Posts mail from a sender that the post site saw only inside an existential box or an
    /// `Optional`: routes look inside, so the sender reaches exactly the subscriptions it would
    /// reach posted as its own type.
    @usableFromInline
    func post<M: Mail>(opened mails: [M], from sender: any Sendable) -> Receipt {
        if _histories.mayKeep(M.self), let history = _histories.history(for: M.self) {
            return postKeepingHistory(history, mails, from: sender, key: SenderKey(sender))
        }
        return deliverInOrder(M.self, from: sender, key: SenderKey(sender), recording: mails.last, mails: mails.count) {
            $0.deliver(contentsOf: mails, from: sender, context: $1)
        }
    }

    /// One post: captures its recipients and lanes, delivers to them holding the lanes, then,
    /// holding nothing, finishes departed senders' streams and releases what the post let go of
    /// (the snapshot, which may hold the last reference to a subscription, and replaced kept mail).
    ///
    /// With instrumentation, the post goes the same way in ``deliverInOrder(_:from:key:recording:mails:reportingTo:deliver:)``,
    /// kept out of line so that a post without instrumentation pays one check for it; without,
    /// `deliver` gets no context.
    @inlinable @inline(__always)
    func deliverInOrder<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        key: SenderKey,
        recording last: M?,
        mails: Int = 1,
        deliver: (Recipients<M, S>, PostContext?) -> Receipt
    ) -> Receipt {
        if let _instrumentation {
            return deliverInOrder(
                M.self,
                from: sender,
                key: key,
                recording: last,
                mails: mails,
                reportingTo: _instrumentation,
                deliver: deliver
            )
        }
        let (recipients, lanes, afterUnlock) = capture(M.self, from: sender, key: key, recording: last)
        let receipt = inOrder(lanes) { deliver(recipients, nil) }
        afterUnlock.perform()
        _ = recipients  // the snapshot may hold the last reference to a subscription: released here
        _deferred.run()  // posts this post's filters made, now that its lanes are free
        return receipt
    }

    /// One post under instrumentation: the poster's context is captured before the capture and
    /// handed to `deliver`, and the receipt is reported once the lanes are released.
    @inlinable @inline(never)
    func deliverInOrder<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        key: SenderKey,
        recording last: M?,
        mails: Int,
        reportingTo instrumentation: any MailroomInstrumentation,
        deliver: (Recipients<M, S>, PostContext?) -> Receipt
    ) -> Receipt {
        let context = instrumentation.currentContext()
        let (recipients, lanes, afterUnlock) = capture(M.self, from: sender, key: key, recording: last)
        let receipt = inOrder(lanes) { deliver(recipients, context) }
        afterUnlock.perform()
        _ = recipients
        instrumentation.didPost(M.self, mails: mails, receipt: receipt)
        _deferred.run()
        return receipt
    }

    /// Captures who a post must reach and the lanes it holds while it yields, after the table's
    /// housekeeping for the post.
    ///
    /// Recipients are captured before the lanes are taken: posts still reach every shared
    /// subscriber in the order they take the lanes, and a subscription filed after the capture
    /// (which the post does not reach) was filed after the post began. Capturing under `index`
    /// also orders the post against a replaying subscribe, which reads the kept mail there.
    ///
    /// Everything a post does under a lock that a post to another room also takes happens in
    /// here: in `Registry.lookUp` and `RouteTable.capturePost`.
    @inlinable
    func capture<M: Mail, S: Sendable>(
        _ type: M.Type,
        from sender: S?,
        key: SenderKey,
        recording mail: M?
    ) -> (Recipients<M, S>, Lanes, AfterUnlock<LatestMail<M>.Displaced?>) {
        let (table, taps) = withRegistry { $0.lookUp(M.self) }
        // Written in place under the lock rather than returned through it: a tuple of these
        // generic values returned through the lock's closure was copied and destroyed by
        // value witnesses on every post.
        var recipients = Recipients<M, S>()
        var lanes = Lanes()
        var afterUnlock = AfterUnlock<LatestMail<M>.Displaced?>(releasing: nil)
        var check = RoomCheck<M>.none
        if let table {
            let lookup = key.roomLookup
            let (captured, retired) = table.withIndex {
                table.capturePost(
                    mail,
                    from: sender,
                    key: key,
                    room: lookup,
                    into: &recipients,
                    lanes: &lanes,
                    check: &check,
                    afterUnlock: &afterUnlock
                )
            }
            if retired { forget(table) }
            // Outside the lock: is the room found the sender's? (See `RoomCheck`.)
            if captured, !check.holds(for: sender, key: key) {
                recipients._pinned = nil
                lanes = lanes.withoutRoom
            }
        }
        recipients._taps = taps
        return (recipients, lanes, afterUnlock)
    }
}
