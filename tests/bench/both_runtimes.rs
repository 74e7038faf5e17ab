// both_runtimes.rs - for make bench only: one process whose core holds both
// kinds of suspended async frames coreq scans for, so that its one pass
// over writable memory feeds both runtimes at once.
//
// Rust side: four boxed futures parked on a never-ready leaf (the `dyn
// Future` scan finds them).  C++ side: corpus/async_coro.cc linked in with
// its main renamed (folly's async-stack ABI, the cookie scan finds its
// detached suspended chain); `async_coro heap MIB` then fills MIB MiB of
// heap and crashes (SIGSEGV) in C++.
use std::ffi::CString;
use std::future::Future;
use std::os::raw::{c_char, c_int};
use std::pin::Pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

extern "C" {
    fn async_coro_main(argc: c_int, argv: *const *const c_char) -> c_int;
}

struct Parked;

impl Future for Parked {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u32> {
        Poll::Pending
    }
}

async fn leaf(id: u32) -> u32 {
    Parked.await + id
}

async fn outer(id: u32) -> u32 {
    leaf(id).await * 2
}

fn waker() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(std::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}

fn main() {
    let mib = std::env::args().nth(1).unwrap_or_else(|| "1024".into());
    let mut tasks: Vec<Pin<Box<dyn Future<Output = u32>>>> = Vec::new();
    for id in 0..4 {
        tasks.push(Box::pin(outer(id)));
    }
    let w = waker();
    let mut cx = Context::from_waker(&w);
    for t in tasks.iter_mut() {
        let _ = t.as_mut().poll(&mut cx);
    }
    let args: Vec<CString> = ["async_coro", "heap", &mib].iter().map(|s| CString::new(*s).unwrap()).collect();
    let argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    let rc = unsafe { async_coro_main(argv.len() as c_int, argv.as_ptr()) };
    std::hint::black_box(&tasks);
    std::process::exit(rc);
}
