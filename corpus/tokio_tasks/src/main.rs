// tokio_tasks - a real tokio (Debian's librust-tokio-dev) program whose core
// holds tasks in every state a service leaves them in.
//
// `#[tokio::main]` starts a multi-thread runtime with 4 workers.  The main
// future spawns the tasks below, waits until each has reached its await (or
// its loop), and then awaits the JoinHandle of `crasher`, which aborts the
// process.  Each await line where a task stays parked carries a marker
// comment `AWAIT:<tag>`, and the first line of each async body `BODY:<tag>`;
// the test greps the markers for the lines (SuspendK = the k-th await of the
// body, from 0).  The tasks, outermost future first, each frame
// function@tag (a leaf future is its type's last path component):
//
//   TASK x2 notify_outer@notify_outer notify_middle@notify_middle notify_leaf@notify_leaf Notified
//   TASK x1 recv_outer@recv_outer recv_leaf@recv_leaf Receiver
//   TASK x1 sleep_outer@sleep_outer sleep_leaf@sleep_leaf Sleep
//   TASK x1 lock_outer@lock_outer lock_middle@lock_middle lock_leaf@lock_leaf Acquire  (via tokio's lock, acquire)
//   TASK x1 never_polled@never_polled           (idle, on a current_thread runtime never driven)
//   RUNNING x2 spinner crasher                  (running on a worker each)
//   BLOCK_ON main@main JoinHandle
//   FREED x1 finished
//
// `tokio_tasks boxed` spawns the same tasks as Pin<Box<dyn Future + Send>>
// (the same chains, found through the box), and just before the crash
// leaves four stale `dyn Future` fat pointers in a leaked heap array, none
// of them a future (the phantoms a word scan must not report):
//
//   STALE read_only        data = the future type's vtable itself
//   STALE misaligned       data = a heap word not at the 128-byte alignment of sleep_outer's future
//   STALE inside_chunk     data = 128 bytes into a zeroed heap buffer (reads as Unresumed)
//   STALE free_chunk       data = a boxed 4 KiB future, freed
//
// sleep_outer's future awaits a Sleep, 128-aligned, at offset 0: the boxed
// sleep_outer and its awaitees share one address.
//
// `finished` ran to completion and was freed before the crash: it must not
// be reported.  The live tasks are the 5 suspended ones + never_polled + the
// 2 running ones = 8 (7 on the multi-thread runtime, 1 on the idle one).
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, Mutex, Notify};

/// How many tasks reached the await they stay parked at.
static PARKED: AtomicUsize = AtomicUsize::new(0);
static SPINNING: AtomicBool = AtomicBool::new(false);
static STOP: AtomicBool = AtomicBool::new(false);
static BOXED: AtomicBool = AtomicBool::new(false);
/// The stale fat pointers of `boxed` mode, kept reachable.
static STALE: AtomicPtr<[usize; 8]> = AtomicPtr::new(std::ptr::null_mut());

type BoxedTask = Pin<Box<dyn Future<Output = u32> + Send>>;

/// Spawns f, boxed as a `dyn Future` in `boxed` mode.
fn spawn<F: Future<Output = u32> + Send + 'static>(f: F) -> tokio::task::JoinHandle<u32> {
    if BOXED.load(Ordering::SeqCst) {
        tokio::spawn(Box::pin(f) as BoxedTask)
    } else {
        tokio::spawn(f)
    }
}

/// A fat pointer's two words: data, vtable.
fn words(f: &BoxedTask) -> [usize; 2] {
    let p: *const (dyn Future<Output = u32> + Send) = &**f;
    unsafe { std::mem::transmute::<*const (dyn Future<Output = u32> + Send), [usize; 2]>(p) }
}

/// Leaves the STALE fat pointers (see the header) in a leaked heap array.
/// Not inlined: its frame is dead (below the stack pointer) at the crash.
#[inline(never)]
fn leave_stale_words() {
    let stale: &'static mut [usize; 8] = Box::leak(Box::new([0usize; 8]));
    let zeros: &'static mut [u64] = Box::leak(vec![0u64; 512].into_boxed_slice());
    let base = zeros.as_ptr() as usize;
    let notify: BoxedTask = Box::pin(notify_outer(Arc::new(Notify::new())));
    let sleep: BoxedTask = Box::pin(sleep_outer(1));
    let big: BoxedTask = Box::pin(big_wait(Arc::new(Notify::new())));
    let (n, s, b) = (words(&notify), words(&sleep), words(&big));
    stale[0] = n[1]; // read_only
    stale[1] = n[1];
    stale[2] = if (base + 8) % 128 != 0 { base + 8 } else { base + 24 }; // misaligned
    stale[3] = s[1];
    stale[4] = base + 128; // inside_chunk
    stale[5] = n[1];
    stale[6] = b[0]; // free_chunk
    stale[7] = b[1];
    std::hint::black_box(&*stale); // the words are in memory now, whatever the optimiser sees
    drop(big);
    drop(notify);
    drop(sleep);
    STALE.store(stale, Ordering::SeqCst);
    std::hint::black_box(&STALE);
}

/// A future of more than 4 KiB: freed, its chunk goes back to malloc's bins.
async fn big_wait(n: Arc<Notify>) -> u32 {
    let buf = [7u8; 4096];
    n.notified().await;
    std::hint::black_box(&buf)[100] as u32
}
const SUSPENDED_TASKS: usize = 5;

#[inline(never)]
fn parked() {
    PARKED.fetch_add(1, Ordering::SeqCst);
}

#[inline(never)]
fn fatal(reason: u32) -> u32 {
    if reason != 0 {
        std::process::abort();
    }
    reason
}

async fn notify_leaf(n: Arc<Notify>) -> u32 { // BODY:notify_leaf
    parked();
    n.notified().await; // AWAIT:notify_leaf
    1
}

async fn notify_middle(n: Arc<Notify>) -> u32 { // BODY:notify_middle
    let r = notify_leaf(n).await; // AWAIT:notify_middle
    r + 1
}

async fn notify_outer(n: Arc<Notify>) -> u32 { // BODY:notify_outer
    let r = notify_middle(n).await; // AWAIT:notify_outer
    r * 2
}

async fn recv_leaf(rx: oneshot::Receiver<u32>) -> u32 { // BODY:recv_leaf
    parked();
    rx.await.unwrap_or(3) // AWAIT:recv_leaf
}

async fn recv_outer(rx: oneshot::Receiver<u32>) -> u32 { // BODY:recv_outer
    let r = recv_leaf(rx).await; // AWAIT:recv_outer
    r + 4
}

async fn sleep_leaf(secs: u64) -> u32 { // BODY:sleep_leaf
    parked();
    tokio::time::sleep(Duration::from_secs(secs)).await; // AWAIT:sleep_leaf
    5
}

async fn sleep_outer(secs: u64) -> u32 { // BODY:sleep_outer
    let r = sleep_leaf(secs).await; // AWAIT:sleep_outer
    r + 6
}

async fn lock_leaf(m: Arc<Mutex<u32>>) -> u32 { // BODY:lock_leaf
    parked();
    let g = m.lock().await; // AWAIT:lock_leaf
    *g + 7
}

async fn lock_middle(m: Arc<Mutex<u32>>) -> u32 { // BODY:lock_middle
    let r = lock_leaf(m).await; // AWAIT:lock_middle
    r + 8
}

async fn lock_outer(m: Arc<Mutex<u32>>) -> u32 { // BODY:lock_outer
    let r = lock_middle(m).await; // AWAIT:lock_outer
    r + 9
}

async fn never_polled(id: u32) -> u32 { // BODY:never_polled
    let r = tokio::task::yield_now().await;
    let _ = r;
    id
}

async fn finished(id: u32) -> u32 {
    id + 10
}

async fn spinner() -> u32 {
    SPINNING.store(true, Ordering::SeqCst);
    let mut n = 0u32;
    while !STOP.load(Ordering::Relaxed) {
        n = n.wrapping_add(1);
        std::hint::spin_loop();
    }
    n
}

async fn crasher() -> u32 {
    while PARKED.load(Ordering::SeqCst) < SUSPENDED_TASKS || !SPINNING.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(5));
    }
    // Let the last parked task get from parked() into its await.
    std::thread::sleep(Duration::from_millis(200));
    if BOXED.load(Ordering::SeqCst) {
        leave_stale_words();
    }
    fatal(PARKED.load(Ordering::SeqCst) as u32)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() { // BODY:main
    BOXED.store(std::env::args().nth(1).as_deref() == Some("boxed"), Ordering::SeqCst);
    // A runtime that is never driven, with one task spawned on it.
    let idle = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let _never = idle.spawn(never_polled(11));

    let done = spawn(finished(1)).await.unwrap_or(0);
    let notify = Arc::new(Notify::new());
    let (tx, rx) = oneshot::channel::<u32>();
    let mutex = Arc::new(Mutex::new(done));
    let guard = mutex.lock().await;

    let mut handles = Vec::new();
    handles.push(spawn(notify_outer(notify.clone())));
    handles.push(spawn(notify_outer(notify.clone())));
    handles.push(spawn(recv_outer(rx)));
    handles.push(spawn(sleep_outer(3600)));
    handles.push(spawn(lock_outer(mutex.clone())));
    while PARKED.load(Ordering::SeqCst) < SUSPENDED_TASKS {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let spin = spawn(spinner());
    let crash = spawn(crasher());
    let r = crash.await; // AWAIT:main
    STOP.store(true, Ordering::SeqCst);
    drop(guard);
    let _ = tx.send(1);
    notify.notify_waiters();
    let _ = spin.await;
    for h in handles {
        let _ = h.await;
    }
    drop(idle);
    std::process::exit(r.map(|v| v as i32).unwrap_or(1));
}
