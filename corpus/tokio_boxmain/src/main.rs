// tokio_boxmain - a tokio (Debian's librust-tokio-dev) program whose main
// future is driven boxed: Runtime::block_on(Pin<Box<dyn Future>>).  The
// future block_on drives is then also behind a `dyn Future` fat pointer (in
// block_on's frame), so an analyser that finds futures both ways must report
// it once (issue 34).  It prints what it made (the oracle), one line each:
//
//   BLOCK_ON boxed_main AWAIT:boxed_main      the boxed future block_on drives
//   TASK waiter AWAIT:waiter                  a task parked on a oneshot receive
//   RUNNING crasher                           the task that aborts the process
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::oneshot;

static PARKED: AtomicUsize = AtomicUsize::new(0);

#[inline(never)]
fn fatal(reason: usize) -> usize {
    if reason != 0 {
        std::process::abort();
    }
    reason
}

async fn waiter(rx: oneshot::Receiver<u32>) -> u32 { // BODY:waiter
    PARKED.fetch_add(1, Ordering::SeqCst);
    rx.await.unwrap_or(2) // AWAIT:waiter
}

async fn crasher() -> u32 {
    while PARKED.load(Ordering::SeqCst) < 1 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));
    fatal(PARKED.load(Ordering::SeqCst)) as u32
}

async fn boxed_main() -> u32 { // BODY:boxed_main
    let (tx, rx) = oneshot::channel::<u32>();
    let w = tokio::spawn(waiter(rx));
    let c = tokio::spawn(crasher());
    let r = c.await.unwrap_or(0); // AWAIT:boxed_main
    let _ = tx.send(r);
    w.await.unwrap_or(0)
}

fn main() {
    println!("BLOCK_ON boxed_main AWAIT:boxed_main");
    println!("TASK waiter AWAIT:waiter");
    println!("RUNNING crasher");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let f: Pin<Box<dyn Future<Output = u32> + Send>> = Box::pin(boxed_main());
    let r = rt.block_on(f);
    std::process::exit(r as i32);
}
