"""Types of the compiled core (bindings/) that the package re-exports as its API: the options classes, whose
fields come from one field list each in C++ (support/fields.h). tests/python/test_api_typing.py checks every
class here against the fields of the built module. The rest of the module is typed Any (__getattr__).
"""
from typing import Any, ClassVar, Dict, List, Optional, Tuple


def __getattr__(name: str) -> Any: ...



class HardwareParams:
    """Machine facts the search uses: every field by keyword, the first eight also by position; a
    field not given (or None) takes the default of `target`, else of the host (Target("llvm")); -1: take it from
    the target. target: a Target or its text."""
    field_names: ClassVar[Tuple[str, ...]]
    num_cores: int
    vector_unit_bytes: int
    cache_line_bytes: int
    max_shared_memory_per_block: int
    max_local_memory_per_block: int
    max_threads_per_block: int
    max_vthread_extent: int
    warp_size: int
    l1_cache_bytes: int
    l2_cache_bytes: int
    l3_cache_bytes: int
    clock_mhz: int
    peak_gflops: int
    peak_bandwidth_gbs: int
    num_vector_registers: int
    fma_units: int
    max_registers_per_thread: int
    def __init__(
        self,
        num_cores: Optional[int] = None,
        vector_unit_bytes: Optional[int] = None,
        cache_line_bytes: Optional[int] = None,
        max_shared_memory_per_block: Optional[int] = None,
        max_local_memory_per_block: Optional[int] = None,
        max_threads_per_block: Optional[int] = None,
        max_vthread_extent: Optional[int] = None,
        warp_size: Optional[int] = None,
        *,
        target: Any = None,
        l1_cache_bytes: Optional[int] = None,
        l2_cache_bytes: Optional[int] = None,
        l3_cache_bytes: Optional[int] = None,
        clock_mhz: Optional[int] = None,
        peak_gflops: Optional[int] = None,
        peak_bandwidth_gbs: Optional[int] = None,
        num_vector_registers: Optional[int] = None,
        fma_units: Optional[int] = None,
        max_registers_per_thread: Optional[int] = None,
    ) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> HardwareParams: ...


class SearchParams:
    """The knobs of the search (cpp/search/search_params.h), by keyword; a field not given keeps its default."""
    field_names: ClassVar[Tuple[str, ...]]
    cpu_tiling_structure: str
    gpu_tiling_structure: str
    max_innermost_split_factor: int
    max_vectorize_size: int
    vector_lanes_factor: int
    parallel_iterations_per_core: int
    auto_unroll_candidates: List[int]
    gpu_auto_unroll_candidates: List[int]
    gpu_vectorize: bool
    register_block_share: float
    use_expert_schedule: bool
    max_const_unroll: int
    sample_init_attempts_per_state: int
    evolutionary_search_population: int
    evolutionary_search_num_iters: int
    evolutionary_search_mutation_prob: float
    evolutionary_search_carry_over: bool
    carry_over_fresh_share: float
    sample_init_min_population: int
    sample_init_use_measured_ratio: float
    eps_greedy: float
    num_measures_per_round: int
    transfer_seeds_measured: int
    retry_search_one_round_on_empty: int
    num_threads: int
    def __init__(
        self,
        *,
        cpu_tiling_structure: Optional[str] = None,
        gpu_tiling_structure: Optional[str] = None,
        max_innermost_split_factor: Optional[int] = None,
        max_vectorize_size: Optional[int] = None,
        vector_lanes_factor: Optional[int] = None,
        parallel_iterations_per_core: Optional[int] = None,
        auto_unroll_candidates: Optional[List[int]] = None,
        gpu_auto_unroll_candidates: Optional[List[int]] = None,
        gpu_vectorize: Optional[bool] = None,
        register_block_share: Optional[float] = None,
        use_expert_schedule: Optional[bool] = None,
        max_const_unroll: Optional[int] = None,
        sample_init_attempts_per_state: Optional[int] = None,
        evolutionary_search_population: Optional[int] = None,
        evolutionary_search_num_iters: Optional[int] = None,
        evolutionary_search_mutation_prob: Optional[float] = None,
        evolutionary_search_carry_over: Optional[bool] = None,
        carry_over_fresh_share: Optional[float] = None,
        sample_init_min_population: Optional[int] = None,
        sample_init_use_measured_ratio: Optional[float] = None,
        eps_greedy: Optional[float] = None,
        num_measures_per_round: Optional[int] = None,
        transfer_seeds_measured: Optional[int] = None,
        retry_search_one_round_on_empty: Optional[int] = None,
        num_threads: Optional[int] = None,
    ) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...

class LocalBuilder:
    """Compiles candidate schedules: timeout in seconds per build, n_parallel builds at once (0: the cores)."""
    field_names: ClassVar[Tuple[str, ...]]
    timeout: float
    n_parallel: int
    def __init__(
        self,
        *,
        timeout: Optional[float] = None,
        n_parallel: Optional[int] = None,
    ) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...

class TuningParams:
    """The scalar knobs of a tuning session; autosched.TuningOptions is its subclass."""
    field_names: ClassVar[Tuple[str, ...]]
    num_measure_trials: int
    num_measures_per_round: int
    early_stopping: Optional[int]
    time_budget_s: Optional[float]
    verbose: int
    peak_gflops: Optional[float]
    search_time_share: float
    transfer_seeds: bool
    def __init__(
        self,
        *,
        num_measure_trials: Optional[int] = None,
        num_measures_per_round: Optional[int] = None,
        early_stopping: Optional[int] = None,
        time_budget_s: Optional[float] = None,
        verbose: Optional[int] = None,
        peak_gflops: Optional[float] = None,
        search_time_share: Optional[float] = None,
        transfer_seeds: Optional[bool] = None,
    ) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...
