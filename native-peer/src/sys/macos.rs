//! The macOS side of [`crate::sys`]: the calls it shares with Linux (`unix`: getrusage for the
//! process's CPU, uname, statvfs, the open-file limit, SO_DEBUG, ENOBUFS); everything else is
//! `fallback`'s (no TCP_INFO of Linux's shape, no recvmmsg, no host CPU figures without Mach
//! calls, no ppoll).

pub(crate) use super::fallback::{
    BATCHED_UDP, SendSource, bind_device, boot_id, daemonize, generic_netlink_socket,
    host_cpu_times, join_ssm_v6, pin_to_cpu, process_start_time, receive_own_groups_only,
    recv_batch, recv_discard, route_netlink_socket, run_as_batch, send_batch, set_max_pacing_rate,
    set_priority, set_recv_low_water, set_tclass_v6, set_tcp_congestion, set_tcp_mss,
    set_tcp_quickack, set_udp_segment, tcp_congestion, tcp_info, tcp_mss, tighten_timer_slack,
    total_memory, unsent_bytes, wait_readable,
};
pub(crate) use super::unix::{
    filesystem_bytes, is_no_buffer_space, process_cpu_times, raise_fd_limit, set_so_debug, uname,
};
