//! The system-call filter: what no confined program needs and an escape
//! would (debugging other processes, new namespaces, io_uring, which
//! bypasses the filter, kernel keyrings and modules, mounts), and the
//! sockets its network setting does not allow.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::Network;

/// Refused with `EPERM` whatever their arguments.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_process_madvise,
    libc::SYS_pidfd_getfd,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_name_to_handle_at,
    libc::SYS_open_by_handle_at,
    libc::SYS_kcmp,
    libc::SYS_personality,
];

/// Namespaces a `clone` may not create.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// Install the filters; the caller has set `no_new_privs`.
pub(crate) fn apply(network: &Network) -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp on {}: {e}", std::env::consts::ARCH))?;
    let failed = |e: seccompiler::BackendError| format!("seccomp filter: {e}");
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&call| (call, Vec::new())).collect();
    let flag_rules = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| rule(&[(0, SeccompCmpOp::MaskedEq(flag as u64), flag as u64)]))
        .collect::<Result<_, _>>()
        .map_err(failed)?;
    rules.insert(libc::SYS_clone, flag_rules);
    // Terminal input injection.
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(&[(1, SeccompCmpOp::Eq, libc::TIOCSTI)]).map_err(failed)?,
            rule(&[(1, SeccompCmpOp::Eq, libc::TIOCLINUX)]).map_err(failed)?,
        ],
    );
    if let Some(sockets) = socket_rules(network).map_err(failed)? {
        rules.insert(libc::SYS_socket, sockets);
    }
    let eperm = SeccompAction::Errno(libc::EPERM as u32);
    let deny: BpfProgram = SeccompFilter::new(rules, SeccompAction::Allow, eperm, arch)
        .and_then(TryInto::try_into)
        .map_err(failed)?;
    // clone3 passes its flags in memory a filter cannot read: ENOSYS makes
    // the C library fall back to clone, whose flags the filter checks.
    let clone3: BpfProgram = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .and_then(TryInto::try_into)
    .map_err(failed)?;
    let mut programs = vec![deny, clone3];
    if *network != Network::Full {
        // Still refused, but as unsupported: getifaddrs then fails the way
        // ZeroMQ takes for "no interface names" (it aborts on EPERM when it
        // resolves the address a kernel binds). Installed last, so this
        // errno wins over the EPERM above.
        let netlink = rule(&[(0, SeccompCmpOp::Eq, libc::AF_NETLINK as u64)]).map_err(failed)?;
        let netlink: BpfProgram = SeccompFilter::new(
            BTreeMap::from([(libc::SYS_socket, vec![netlink])]),
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EOPNOTSUPP as u32),
            arch,
        )
        .and_then(TryInto::try_into)
        .map_err(failed)?;
        programs.push(netlink);
    }
    for program in &programs {
        seccompiler::apply_filter(program).map_err(|e| format!("seccomp: {e}"))?;
    }
    Ok(())
}

/// `socket(domain, type, ...)` calls to refuse: every one without network;
/// with listening ports or a proxy, all but TCP over IPv4 and IPv6.
fn socket_rules(network: &Network) -> Result<Option<Vec<SeccompRule>>, seccompiler::BackendError> {
    const SOCK_TYPE_MASK: u64 = 0xf;
    Ok(match network {
        Network::Full => None,
        Network::None => Some(vec![rule(&[(0, SeccompCmpOp::Ge, 0)])?]),
        Network::Listen(_) | Network::Proxy(_) => Some(vec![
            rule(&[
                (0, SeccompCmpOp::Ne, libc::AF_INET as u64),
                (0, SeccompCmpOp::Ne, libc::AF_INET6 as u64),
            ])?,
            rule(&[(
                1,
                SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                libc::SOCK_DGRAM as u64,
            )])?,
            rule(&[(
                1,
                SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                libc::SOCK_RAW as u64,
            )])?,
        ]),
    })
}

/// A rule whose conditions (argument, comparison, value) must all hold.
fn rule(conditions: &[(u8, SeccompCmpOp, u64)]) -> Result<SeccompRule, seccompiler::BackendError> {
    let conditions = conditions
        .iter()
        .map(|(arg, op, value)| {
            SeccompCondition::new(*arg, SeccompCmpArgLen::Dword, op.clone(), *value)
        })
        .collect::<Result<Vec<_>, _>>()?;
    SeccompRule::new(conditions)
}
