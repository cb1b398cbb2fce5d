"""The `[population]` table (`PopulationConfig`): how ES evaluates its members (llm/es/options.py explains
each setting; which strategy evaluates them and its rules on the settings: llm/member_options.py)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from escov.llm.member_options import MEMBER_MODES
from escov.llm.settings.es_config import check_noise_rank

LOWRANK_LAYOUTS = ("auto", "factored", "stacked")
STACK_AUTO_BYTES = 256 * 2 ** 20  # "auto" stacks low-rank members while their matrices take at most this


@dataclass
class PopulationConfig:
    batched: bool = False     # all members in one batched generate (HF engine); False: member by member
    noise_rank: int = 0       # 0: full-rank noise; r > 0: low-rank E = A B^T / sqrt(r) for weight matrices
    max_rows: int = 4096      # rows per batched forward (whole members per block)
    lowrank_layout: str = "auto"  # low rank, batched: factored x W^T + (x B) A^T | stacked W_m | auto
    keep_noise_mb: int = 1024  # noise runs read for the members, kept for the update (0: read again from the seeds)
    members: str = "auto"     # the member-evaluation strategy: auto (Ray with workers, batched_hf when batched, else
                              # one_by_one) | one_by_one | batched_hf | ray | vllm_lora | vllm_inplace

    def validate(self) -> None:
        if not isinstance(self.batched, bool):
            raise ValueError(f"population.batched must be true or false, got {self.batched!r}")
        check_noise_rank(self.noise_rank)
        if isinstance(self.max_rows, bool) or not isinstance(self.max_rows, int) or self.max_rows < 1:
            raise ValueError(f"population.max_rows must be an integer >= 1, got {self.max_rows!r}")
        if isinstance(self.keep_noise_mb, bool) or not isinstance(self.keep_noise_mb, int) or self.keep_noise_mb < 0:
            raise ValueError(f"population.keep_noise_mb must be an integer >= 0, got {self.keep_noise_mb!r}")
        if self.lowrank_layout not in LOWRANK_LAYOUTS:
            raise ValueError(f"population.lowrank_layout must be one of {list(LOWRANK_LAYOUTS)}, "
                             f"got {self.lowrank_layout!r}")
        if self.members not in MEMBER_MODES:
            raise ValueError(f"population.members must be one of {list(MEMBER_MODES)}, got {self.members!r}")

    @property
    def plain(self) -> bool:
        """Member by member with full-rank noise: ES exactly as the paper's loop, no noise kept."""
        return not self.batched and not self.noise_rank

    def factored(self, members: int, matrix_shapes: list[tuple[int, ...]], dtype) -> bool:
        """Whether low-rank members are applied factored (see lowrank_layout)."""
        if self.lowrank_layout != "auto":
            return self.lowrank_layout == "factored"
        stacked = members * sum(math.prod(s) for s in matrix_shapes) * dtype.itemsize
        return stacked > STACK_AUTO_BYTES
