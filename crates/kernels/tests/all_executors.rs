//! Every registered kernel on every executor, at its small size: runs succeed and validate.

use parbench_kernels::{ExecutorKind, Params, PinPolicy, registry};

#[test]
fn every_kernel_validates_on_every_executor() {
    for kernel in registry() {
        let params = Params::small(*kernel);
        for kind in ExecutorKind::ALL {
            let exec = kind
                .build(2, PinPolicy::None)
                .unwrap_or_else(|e| panic!("building {kind}: {e}"));
            let mut prepared = kernel
                .prepare(&params, exec.threads())
                .unwrap_or_else(|e| panic!("preparing {} for {kind}: {e}", kernel.name()));
            for _ in 0..2 {
                if let Err(e) = prepared.run(exec.as_ref()) {
                    panic!("{} on {kind}: {e}", kernel.name());
                }
            }
        }
    }
}
