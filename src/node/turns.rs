//! One ordered queue per transaction: the order its calls reach the connection in.
//!
//! Each call of a transaction (a statement, a joined backend unit, `commit`/`rollback`) runs as
//! its own task; which task the scheduler polls first is not the order the calls were made in
//! (tokio's LIFO slot, several workers). So each call takes a numbered `Turn` when it is issued —
//! synchronously, on the JS thread — and waits until every earlier turn is done before it
//! touches the connection. A turn is done when it is dropped: after its call finished, or
//! unused (a call given up before its turn came is skipped, never waited for).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::Notify;

/// The turns of one transaction.
#[derive(Default)]
pub struct Turns(Arc<Shared>);

#[derive(Default)]
struct Shared {
    counts: Mutex<Counts>,
    /// Signalled whenever the turn being served moves on.
    moved: Notify,
}

#[derive(Default)]
struct Counts {
    /// The next number to hand out.
    issued: u64,
    /// Every turn below this is done: this one is being served (or is next).
    serving: u64,
    /// Turns above `serving` that are done already (dropped before their turn came).
    done_early: BTreeSet<u64>,
}

/// One call's place in the queue; done when dropped.
pub struct Turn {
    shared: Arc<Shared>,
    number: u64,
}

impl Turns {
    /// The next place in the queue; call it when the call is issued.
    pub fn take(&self) -> Turn {
        let mut c = self.0.lock();
        let number = c.issued;
        c.issued += 1;
        Turn {
            shared: self.0.clone(),
            number,
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // The counts stay consistent even if a holder panicked (each update is one step).
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Turn {
    /// Resolves once every turn taken before this one is done.
    pub async fn wait(&self) {
        loop {
            // Created before the check, so a move between the check and the await still wakes.
            let moved = self.shared.moved.notified();
            if self.shared.lock().serving == self.number {
                return;
            }
            moved.await;
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut counts = self.shared.lock();
        let c = &mut *counts;
        if c.serving != self.number {
            c.done_early.insert(self.number);
            return;
        }
        c.serving += 1;
        while c.done_early.remove(&c.serving) {
            c.serving += 1;
        }
        drop(counts);
        self.shared.moved.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::Turns;
    use std::sync::{Arc, Mutex};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .build()
            .expect("a test runtime")
    }

    #[test]
    fn turns_are_served_in_the_order_they_were_taken() {
        let rt = runtime();
        let turns = Turns::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let taken: Vec<_> = (0..50).map(|i| (i, turns.take())).collect();
        // Spawned in reverse, so the later turns are polled first.
        let tasks: Vec<_> = taken
            .into_iter()
            .rev()
            .map(|(i, turn)| {
                let log = log.clone();
                rt.spawn(async move {
                    turn.wait().await;
                    log.lock().unwrap().push(i);
                })
            })
            .collect();
        rt.block_on(async {
            for t in tasks {
                t.await.unwrap();
            }
        });
        assert_eq!(*log.lock().unwrap(), (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_turn_dropped_unused_is_skipped() {
        let rt = runtime();
        let turns = Turns::default();
        let first = turns.take();
        let unused = turns.take();
        let third = turns.take();
        let waiting = rt.spawn(async move { third.wait().await });
        drop(unused);
        drop(first);
        rt.block_on(async { waiting.await.unwrap() });
        // A turn taken after all of them is served at once.
        rt.block_on(turns.take().wait());
    }
}
