// rust_async.rs - a std-only Rust program whose core holds suspended futures.
//
// A tiny executor keeps its tasks as Pin<Box<dyn Future>> in a Vec and polls
// them round-robin.  By the time the last task aborts (from a plain fn called
// inside an async fn, on its second poll), every other task is parked at a
// known await point, at a known depth.  Each await line where a task stays
// parked carries a marker comment `AWAIT:<tag>`, and the first line of each
// async body `BODY:<tag>`; the test greps the markers for the lines (and
// counts the awaits between them for the state, SuspendK = the k-th await
// of the body, from 0) and compares them with the chains coreq reports.
// The chains the program leaves behind, outermost future first, each frame
// as function@tag (a leaf future is just its type):
//
//   CHAIN x2 outer@outer middle@middle leaf@leaf Parked
//   CHAIN x1 single@single Parked
//   CHAIN x1 boxed@boxed leaf@leaf Parked
//   CHAIN x1 spawn_tasks::{async_block#0}@block Parked
//   CHAIN x1 never_started@never_started
//   CHAIN x1 aligned@aligned Aligned
//
// never_started is never polled: it is Unresumed, at its BODY line.
// aligned awaits a 128-aligned leaf (as tokio's Sleep is): the leaf sits at
// offset 0 of aligned's future, so the two share an address.
// crash_task is being polled when the process aborts: its state field is
// stale and it is on the stack, so it is not a suspended future.
//
// `rust_async heap MIB` (for make bench): first MIB MiB of heap written with
// pseudo-random words and kept alive, then the same tasks and the same abort.
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

/// A leaf future that is never ready: where every parked task waits.
struct Parked {
    id: u32,
}

impl Future for Parked {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u32> {
        if self.id == u32::MAX {
            return Poll::Ready(self.id);
        }
        Poll::Pending
    }
}

/// A leaf future that is ready on its second poll.
struct YieldOnce {
    polled: bool,
}

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.polled {
            return Poll::Ready(());
        }
        self.polled = true;
        Poll::Pending
    }
}

/// A leaf future aligned like tokio's Sleep (whose timer entry is cache
/// padded): awaited first in an async fn, it sits at offset 0 of its future.
#[repr(align(128))]
struct Aligned {
    id: u32,
}

impl Future for Aligned {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u32> {
        if self.id == u32::MAX {
            return Poll::Ready(self.id);
        }
        Poll::Pending
    }
}

#[inline(never)]
fn fatal(reason: u32) -> u32 {
    if reason != 0 {
        std::process::abort();
    }
    reason
}

async fn leaf(id: u32) -> u32 { // BODY:leaf
    let r = Parked { id }.await; // AWAIT:leaf
    r + id
}

async fn middle(id: u32) -> u32 { // BODY:middle
    let r = leaf(id * 2).await; // AWAIT:middle
    r + 1
}

async fn outer(id: u32) -> u32 { // BODY:outer
    let r = middle(id + 1).await; // AWAIT:outer
    r * 3
}

async fn single(id: u32) -> u32 { // BODY:single
    YieldOnce { polled: false }.await;
    let r = Parked { id }.await; // AWAIT:single
    r + 7
}

async fn boxed(id: u32) -> u32 { // BODY:boxed
    let inner: Pin<Box<dyn Future<Output = u32>>> = Box::pin(leaf(id + 40));
    let r = inner.await; // AWAIT:boxed
    r + 5
}

async fn never_started(id: u32) -> u32 { // BODY:never_started
    let r = Parked { id }.await;
    r
}

async fn aligned(id: u32) -> u32 { // BODY:aligned
    let r = Aligned { id }.await; // AWAIT:aligned
    r + 3
}

async fn crash_task(id: u32) -> u32 {
    YieldOnce { polled: false }.await;
    fatal(id)
}

type Task = Pin<Box<dyn Future<Output = u32>>>;

#[inline(never)]
fn spawn_tasks(tasks: &mut Vec<Task>, id: u32) {
    tasks.push(Box::pin(outer(id)));
    tasks.push(Box::pin(outer(id + 10)));
    tasks.push(Box::pin(single(id + 20)));
    tasks.push(Box::pin(boxed(id + 30)));
    tasks.push(Box::pin(async move { // BODY:block
        let v = Parked { id: id + 50 }.await; // AWAIT:block
        v + 1
    }));
    tasks.push(Box::pin(aligned(id + 70)));
    tasks.push(Box::pin(crash_task(id)));
}

fn noop_raw_waker() -> RawWaker {
    fn clone(_: *const ()) -> RawWaker {
        noop_raw_waker()
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    RawWaker::new(std::ptr::null(), &VTABLE)
}

#[inline(never)]
fn run_tasks(tasks: &mut Vec<Task>, rounds: u32) -> u32 {
    let waker = unsafe { Waker::from_raw(noop_raw_waker()) };
    let mut cx = Context::from_waker(&waker);
    let mut done = 0;
    for _ in 0..rounds {
        for task in tasks.iter_mut() {
            if let Poll::Ready(v) = task.as_mut().poll(&mut cx) {
                done += v;
            }
        }
    }
    done
}

/// MIB MiB of heap, every word written (xorshift64*, never zero), for the
/// scan benchmark; the caller keeps it alive until the abort.
#[inline(never)]
fn fill_heap(mib: usize) -> Vec<u64> {
    let words = mib << 17;
    let mut heap: Vec<u64> = Vec::with_capacity(words);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..words {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        heap.push(x.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    }
    std::hint::black_box(heap)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut heap = Vec::new();
    let mut id = args.len() as u32;
    if args.len() == 3 && args[1] == "heap" {
        let mib = args[2].parse::<usize>().unwrap_or_else(|_| {
            eprintln!("usage: rust_async [heap MIB]");
            std::process::exit(2)
        });
        heap = fill_heap(mib);
        id -= 2; // the tasks' ids as without the mode's arguments
    }
    let mut later: Vec<Task> = Vec::new();
    later.push(Box::pin(never_started(id + 60)));
    let mut tasks: Vec<Task> = Vec::new();
    spawn_tasks(&mut tasks, id);
    let done = run_tasks(&mut tasks, 3);
    println!("{} {} {}", done, later.len(), std::hint::black_box(&heap).len());
}
