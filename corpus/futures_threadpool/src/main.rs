// futures_threadpool - a futures-executor (Debian's librust-futures-executor-dev,
// 0.3, feature thread-pool) ThreadPool program (issue 34).  A ThreadPool keeps
// each spawned task as an Arc<WakeHandle> whose UnparkMutex holds, while the
// task waits, an UnsafeCell<Option<Task>>: the Task's FutureObj is a
// `*mut dyn Future` to the boxed future.  Two pool threads: tasks park on a
// oneshot receive, a timer-like wait (a thread that sleeps, then would wake
// the task) and an async mutex; one completes (its box freed: not a task any
// more); the last task aborts the process, on a pool thread, once the others
// parked.  Threads: main (parked), two pool threads, the timer thread.
// Before anything runs, the program prints what it spawned (the oracle the
// test reads, one line each):
//   TASK fn AWAIT:tag   parked at the line carrying `// AWAIT:tag`
//   RUNNING fn          polled at the crash
//   DONE fn             completed: not a task
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_channel::oneshot;
use futures_executor::ThreadPool;
use futures_util::lock::Mutex;

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

// A timer-like wait: its first poll starts a thread that sleeps for an hour,
// then wakes the task.
struct Delay(bool);

impl Future for Delay {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        let waker = cx.waker().clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(3600));
            waker.wake();
        });
        Poll::Pending
    }
}

async fn recv_leaf(rx: oneshot::Receiver<u32>) -> u32 {
    parked();
    rx.await.unwrap_or(1) // AWAIT:recv_leaf
}

async fn recv_outer(rx: oneshot::Receiver<u32>) {
    let r = recv_leaf(rx).await; // AWAIT:recv_outer
    std::hint::black_box(r);
}

async fn sleeper(id: u32) {
    parked();
    Delay(false).await; // AWAIT:sleeper
    std::hint::black_box(id);
}

async fn locker(m: &'static Mutex<u32>) {
    parked();
    let g = m.lock().await; // AWAIT:locker
    std::hint::black_box(*g);
}

async fn done_task(id: u32) {
    std::hint::black_box(id);
}

async fn crasher() {
    while PARKED.load(Ordering::SeqCst) < PARKING {
        YieldNow(false).await;
    }
    // The others' polls return (their tasks go back to their cells) first.
    std::thread::sleep(Duration::from_millis(300));
    fatal(PARKED.load(Ordering::SeqCst));
}

fn main() {
    println!("TASK recv_outer AWAIT:recv_outer");
    println!("TASK sleeper AWAIT:sleeper");
    println!("TASK locker AWAIT:locker");
    println!("RUNNING crasher");
    println!("DONE done_task");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let mutex: &'static Mutex<u32> = Box::leak(Box::new(Mutex::new(0)));
    let _guard = futures_executor::block_on(mutex.lock());
    let (_tx, rx) = oneshot::channel::<u32>();
    let pool = ThreadPool::builder().pool_size(2).create().unwrap();
    pool.spawn_ok(done_task(12));
    pool.spawn_ok(recv_outer(rx));
    pool.spawn_ok(sleeper(13));
    pool.spawn_ok(locker(mutex));
    pool.spawn_ok(crasher());
    // The mutex stays held and the sender alive: the tasks stay parked.
    loop {
        std::thread::park();
    }
}
