// futures_pool - a futures-executor (Debian's librust-futures-executor-dev,
// 0.3) LocalPool program (issue 34).  A LocalPool keeps each spawned task
// as a LocalFutureObj, a `*mut dyn Future` to the boxed future, in a
// FuturesUnordered.  The pool runs on the main thread: tasks park on a
// oneshot receive, an async mutex and an mpsc receive; one completes (its
// box freed: not a task any more); a second pool that is never run holds a
// task never polled; the last task aborts the process once the others
// parked.  Before anything runs, the program prints what it spawned (the
// oracle the test reads, one line each):
//   TASK fn AWAIT:tag   parked at the line carrying `// AWAIT:tag`
//   TASK fn BODY:tag    never polled (Unresumed at `// BODY:tag`)
//   RUNNING fn          polled at the crash
//   DONE fn             completed: not a task
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use futures_channel::{mpsc, oneshot};
use futures_executor::LocalPool;
use futures_util::lock::Mutex;
use futures_util::stream::StreamExt;
use futures_util::task::LocalSpawnExt;

static PARKED: AtomicUsize = AtomicUsize::new(0);
const PARKING: usize = 3;

#[inline(never)]
fn parked() {
    PARKED.fetch_add(1, Ordering::SeqCst);
}

#[inline(never)]
fn fatal(reason: usize) -> usize {
    if reason != 0 {
        std::process::abort();
    }
    reason
}

// Pending once (waking itself), then ready: lets the pool run the others.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

async fn recv_leaf(rx: oneshot::Receiver<u32>) -> u32 { // BODY:recv_leaf
    parked();
    rx.await.unwrap_or(1) // AWAIT:recv_leaf
}

async fn recv_outer(rx: oneshot::Receiver<u32>) { // BODY:recv_outer
    let r = recv_leaf(rx).await; // AWAIT:recv_outer
    std::hint::black_box(r);
}

async fn locker(m: &'static Mutex<u32>) { // BODY:locker
    parked();
    let g = m.lock().await; // AWAIT:locker
    std::hint::black_box(*g);
}

async fn streamer(mut rx: mpsc::Receiver<u32>) { // BODY:streamer
    parked();
    let v = rx.next().await; // AWAIT:streamer
    std::hint::black_box(v);
}

async fn done_task(id: u32) {
    std::hint::black_box(id);
}

async fn never_polled(id: u32) { // BODY:never_polled
    YieldNow(false).await;
    std::hint::black_box(id);
}

async fn crasher() {
    while PARKED.load(Ordering::SeqCst) < PARKING {
        YieldNow(false).await;
    }
    fatal(PARKED.load(Ordering::SeqCst));
}

fn main() {
    println!("TASK recv_outer AWAIT:recv_outer");
    println!("TASK locker AWAIT:locker");
    println!("TASK streamer AWAIT:streamer");
    println!("TASK never_polled BODY:never_polled");
    println!("RUNNING crasher");
    println!("DONE done_task");
    let mutex: &'static Mutex<u32> = Box::leak(Box::new(Mutex::new(0)));
    let guard = futures_executor::block_on(mutex.lock());
    let (tx, rx) = oneshot::channel::<u32>();
    let (mtx, mrx) = mpsc::channel::<u32>(1);
    let idle = LocalPool::new();
    idle.spawner().spawn_local(never_polled(11)).unwrap();
    let mut pool = LocalPool::new();
    let sp = pool.spawner();
    sp.spawn_local(done_task(12)).unwrap();
    sp.spawn_local(recv_outer(rx)).unwrap();
    sp.spawn_local(locker(mutex)).unwrap();
    sp.spawn_local(streamer(mrx)).unwrap();
    sp.spawn_local(crasher()).unwrap();
    pool.run();
    drop(guard);
    let _ = tx.send(1);
    drop(mtx);
    drop(idle);
}
