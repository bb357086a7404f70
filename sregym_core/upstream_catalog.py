"""Upstream SREGym's problem catalogue, for compatibility: every registry id, in registry order.

Facts from upstream's ``sregym/conductor/problems/registry.py`` and ``problem_sets.py`` (see
``upstream-parity.md`` §1). Which of *our* problems is the equivalent of an id is not recorded
here: a problem file says so itself with ``aliases:``. ``note`` explains an id with no equivalent, or
names where the equivalent's mechanism differs from upstream's.
"""

from __future__ import annotations

from typing import NamedTuple


class UpstreamProblem(NamedTuple):
    id: str
    app: str  # HR hotel-reservation, AS astronomy-shop, SN social-network, TT train-ticket,
    #           BHR blueprint-hotel-reservation, FC FleetCast/TiDB
    lite: bool  # in upstream's SREGym-Lite suite
    note: str = ""  # why there is no equivalent problem, or how its mechanism differs


#: The name of upstream's lite suite (``--suite sregym-lite``).
LITE_SUITE = "sregym-lite"

UPSTREAM_PROBLEMS: tuple[UpstreamProblem, ...] = (
    UpstreamProblem("faulty_image_correlated", "HR", False),
    UpstreamProblem("update_incompatible_correlated", "HR", False),
    UpstreamProblem("incorrect_image", "AS", False),
    UpstreamProblem("incorrect_port_assignment", "AS", False),
    UpstreamProblem("kafka_producer_leak", "AS", False),
    UpstreamProblem("unschedulable_incorrect_port_assignment", "AS", True),
    UpstreamProblem("misconfig_app_hotel_res", "HR", False),
    UpstreamProblem("missing_env_variable_astronomy_shop", "AS", False),
    UpstreamProblem("revoke_auth_mongodb-1", "HR", False),
    UpstreamProblem("revoke_auth_mongodb-2", "HR", False),
    UpstreamProblem("storage_user_unregistered-1", "HR", False),
    UpstreamProblem("storage_user_unregistered-2", "HR", False),
    UpstreamProblem("valkey_auth_disruption", "AS", True),
    UpstreamProblem("valkey_memory_disruption", "AS", False),
    UpstreamProblem("edge_request_filter_cpu_saturation", "AS", True),
    UpstreamProblem("ephemeral_port_range_hotel_reservation", "HR", False,
                    "same pod sysctl (32000-32003, on geo); the embedded cluster applies it to the pod's "
                    "processes with a cgroup/connect4 BPF program (bpf_bind to a free port of the range, "
                    "EADDRNOTAVAIL when none is left), a real kubelet in the pod's network namespace"),
    UpstreamProblem("secret_rotation_stale_env_credentials_astronomy_shop", "AS", True),
    UpstreamProblem("capacity_decrease_rpc_retry_storm", "BHR", False),
    UpstreamProblem("gc_capacity_degradation", "BHR", False,
                    "no honest port: CPython reads no collector setting from the environment (no GOGC), and "
                    "its collector tuned to thrash from code costs 3-4x CPU per request, not growing with "
                    "the backlog (tools/gc_thrash_probe.py), so a burst over a tight LimitRange passes when "
                    "it ends: no lasting collapse"),
    UpstreamProblem("load_spike_rpc_retry_storm", "BHR", False),
    UpstreamProblem("search_rate_retry_collapse_hotel_reservation", "HR", True),
    UpstreamProblem("assign_to_non_existent_node", "SN", False),
    UpstreamProblem("auth_miss_mongodb", "SN", False),
    UpstreamProblem("configmap_drift_hotel_reservation", "HR", False),
    UpstreamProblem("cfs_cpu_throttling_hotel_reservation", "HR", False),
    UpstreamProblem("feature_flag_latent_bug_hotel_reservation", "HR", False),
    UpstreamProblem("finalizer_deadlock_controller_hotel_reservation", "HR", True),
    UpstreamProblem("duplicate_pvc_mounts_astronomy_shop", "AS", False),
    UpstreamProblem("duplicate_pvc_mounts_hotel_reservation", "HR", False),
    UpstreamProblem("duplicate_pvc_mounts_social_network", "SN", True),
    UpstreamProblem("env_variable_shadowing_astronomy_shop", "AS", True),
    UpstreamProblem("file_descriptor_exhaustion", "HR", False),
    UpstreamProblem("k8s_target_port-misconfig", "SN", False),
    UpstreamProblem("liveness_probe_misconfiguration_astronomy_shop", "AS", False),
    UpstreamProblem("liveness_probe_misconfiguration_hotel_reservation", "HR", False),
    UpstreamProblem("liveness_probe_misconfiguration_social_network", "SN", False),
    UpstreamProblem("liveness_probe_too_aggressive_astronomy_shop", "AS", False),
    UpstreamProblem("liveness_probe_too_aggressive_hotel_reservation", "HR", False),
    UpstreamProblem("liveness_probe_too_aggressive_social_network", "SN", False),
    UpstreamProblem("init_container_dependency_hang_hotel_reservation", "HR", False),
    UpstreamProblem("init_container_dependency_hang_social_network", "SN", False),
    UpstreamProblem("init_container_dependency_hang_astronomy_shop", "AS", False),
    UpstreamProblem("missing_configmap_hotel_reservation", "HR", False),
    UpstreamProblem("missing_configmap_social_network", "SN", False),
    UpstreamProblem("missing_service_astronomy_shop", "AS", False),
    UpstreamProblem("missing_service_hotel_reservation", "HR", False),
    UpstreamProblem("missing_service_social_network", "SN", False),
    UpstreamProblem("namespace_memory_limit", "HR", True),
    UpstreamProblem("nightly_rebalance_oom_hotel_reservation", "HR", False),
    UpstreamProblem("node_clock_drift_hotel_reservation", "HR", False),
    UpstreamProblem("pod_anti_affinity_deadlock", "SN", False),
    UpstreamProblem("postgres_lock_contention_product_catalog", "AS", False),
    UpstreamProblem("persistent_volume_affinity_violation", "SN", False),
    UpstreamProblem("priority_preemption_cascade_hotel_reservation", "HR", False),
    UpstreamProblem("pvc_claim_mismatch", "HR", False),
    UpstreamProblem("rbac_misconfiguration", "AS", False),
    UpstreamProblem("readiness_probe_misconfiguration_astronomy_shop", "AS", False),
    UpstreamProblem("readiness_probe_misconfiguration_hotel_reservation", "HR", False),
    UpstreamProblem("readiness_probe_misconfiguration_social_network", "SN", True),
    UpstreamProblem("resource_request_too_large", "HR", False),
    UpstreamProblem("resource_request_too_small", "HR", False),
    UpstreamProblem("hpa_missing_effective_cpu_request_hotel_reservation", "HR", False),
    UpstreamProblem("rolling_update_misconfigured_hotel_reservation", "HR", False),
    UpstreamProblem("rolling_update_misconfigured_social_network", "SN", True),
    UpstreamProblem("scale_pod_zero_social_net", "SN", False),
    UpstreamProblem("service_dns_resolution_failure_astronomy_shop", "AS", False),
    UpstreamProblem("service_dns_resolution_failure_social_network", "SN", True),
    UpstreamProblem("sidecar_port_conflict_astronomy_shop", "AS", False),
    UpstreamProblem("sidecar_port_conflict_hotel_reservation", "HR", False),
    UpstreamProblem("sidecar_port_conflict_social_network", "SN", False),
    UpstreamProblem("service_port_conflict_astronomy_shop", "AS", False),
    UpstreamProblem("service_port_conflict_hotel_reservation", "HR", False),
    UpstreamProblem("service_port_conflict_social_network", "SN", False),
    UpstreamProblem("stale_coredns_config_astronomy_shop", "AS", False),
    UpstreamProblem("stale_coredns_config_social_network", "SN", False),
    UpstreamProblem("taint_no_toleration_social_network", "SN", False),
    UpstreamProblem("wrong_bin_usage", "HR", False),
    UpstreamProblem("wrong_dns_policy_astronomy_shop", "AS", True),
    UpstreamProblem("wrong_dns_policy_hotel_reservation", "HR", False),
    UpstreamProblem("wrong_dns_policy_social_network", "SN", False),
    UpstreamProblem("service_wrong_pod_selection_hotel_reservation", "HR", True),
    UpstreamProblem("wrong_service_selector_astronomy_shop", "AS", False),
    UpstreamProblem("wrong_service_selector_hotel_reservation", "HR", False),
    UpstreamProblem("wrong_service_selector_social_network", "SN", True),
    UpstreamProblem("astronomy_shop_ad_service_failure", "AS", False),
    UpstreamProblem("astronomy_shop_ad_service_high_cpu", "AS", False),
    UpstreamProblem("astronomy_shop_ad_service_image_slow_load", "AS", False),
    UpstreamProblem("astronomy_shop_ad_service_manual_gc", "AS", False),
    UpstreamProblem("astronomy_shop_cart_service_failure", "AS", False),
    UpstreamProblem("astronomy_shop_failed_readiness_probe", "AS", False),
    UpstreamProblem("astronomy_shop_payment_service_failure", "AS", False),
    UpstreamProblem("astronomy_shop_payment_service_unreachable", "AS", False),
    UpstreamProblem("astronomy_shop_product_catalog_service_failure", "AS", False),
    UpstreamProblem("kafka_queue_problems", "AS", False),
    UpstreamProblem("kafka_poison_pill_hol_block", "AS", True),
    UpstreamProblem("loadgenerator_flood_homepage", "AS", False),
    UpstreamProblem("trainticket_f17_nested_sql_select_clause_error", "TT", False),
    UpstreamProblem("trainticket_f22_sql_column_name_mismatch_error", "TT", False),
    UpstreamProblem("silent_data_corruption", "HR", False),
    UpstreamProblem("latent_sector_error", "HR", False),
    UpstreamProblem("expired_tls_hotel_reservation", "HR", False),
    UpstreamProblem("ingress_misroute", "HR", False),
    UpstreamProblem("network_policy_block", "HR", True),
    UpstreamProblem("node_conntrack_exhaustion_hotel_reservation", "HR", False),
    UpstreamProblem("dev_shm_exhaustion_hotel_reservation", "HR", False),
    UpstreamProblem("internal_traffic_policy_local_astronomy_shop", "AS", True),
    UpstreamProblem("admission_webhook_outage_hotel_reservation", "HR", True),
    UpstreamProblem("pod_cidr_exhaustion_hotel_reservation", "HR", False),
    UpstreamProblem("calico_route_reflector_label_drift_hotel_reservation", "HR", False,
                    "same BGPPeer selecting reflectors by node-role.kubernetes.io/master with the mesh off; the "
                    "embedded cluster has no BIRD: its network computes the routes from the Node labels, "
                    "BGPConfiguration and BGPPeers and holds unrouted cross-node pod traffic (service proxy; "
                    "EHOSTUNREACH from its cgroup/connect4 guard as root)"),
    UpstreamProblem("admission_webhook_tls_mismatch_hotel_reservation", "HR", False),
    UpstreamProblem("mutating_webhook_resource_limits_social_network", "SN", True),
    UpstreamProblem("psa_restricted_blocks_recreation_hotel_reservation", "HR", False),
    UpstreamProblem("cumulative_admission_webhook_timeout_hotel_reservation", "HR", False),
    UpstreamProblem("cronjob_sidecar_blocks_completion_hotel_reservation", "HR", True),
    UpstreamProblem("kubelet_crash", "AS", False),
    UpstreamProblem("kubelet_eviction_threshold_misconfig", "AS", False),
    UpstreamProblem("workload_imbalance", "AS", False),
    UpstreamProblem("operator_overload_replicas", "FC", False),
    UpstreamProblem("operator_non_existent_storage", "FC", False),
    UpstreamProblem("operator_invalid_affinity_toleration", "FC", False),
    UpstreamProblem("operator_security_context_fault", "FC", False),
    UpstreamProblem("operator_wrong_update_strategy_fault", "FC", False),
    UpstreamProblem("operator_wrong_operator_image", "FC", False),
)

UPSTREAM_IDS: frozenset[str] = frozenset(p.id for p in UPSTREAM_PROBLEMS)

