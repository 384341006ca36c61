"""How `python -m bench served --tenants` shares its memories among end users: most users
light (10-200 memories), a few medium (1,000-5,000), a few heavy (20,000-100,000), and which
users search how often (activity). Plain functions of numbers, so the plan can be read and
tested alone."""

from dataclasses import dataclass

import numpy as np

# (name, fewest, most memories); the heavy and medium bands hold these shares of all memories.
BANDS = (("light", 10, 200), ("medium", 1_000, 5_000), ("heavy", 20_000, 100_000))
HEAVY_SHARE = 0.30
MEDIUM_SHARE = 0.05


@dataclass(frozen=True)
class PlannedUser:
    external_id: str
    band: str
    memories: int


def user_sizes(total: int, users: int, *, seed: int = 11) -> list[PlannedUser]:
    """`users` end users holding about `total` memories between them (the light band absorbs
    the rounding). Heavy and medium sizes are spread evenly over their band; light sizes are
    log-uniform, so most light users have few memories."""
    rng = np.random.default_rng(seed)
    planned: list[PlannedUser] = []
    left = total
    counts = {}
    for name, share, low, high in (
        ("heavy", HEAVY_SHARE, *BANDS[2][1:]),
        ("medium", MEDIUM_SHARE, *BANDS[1][1:]),
    ):
        count = max(1, round(share * total / ((low + high) / 2)))
        sizes = np.linspace(low, high, count) if count > 1 else np.array([float(low)])
        sizes = np.clip(sizes * (share * total / sizes.sum()), low, high).round().astype(int)
        counts[name] = count
        for size in sizes:
            planned.append(PlannedUser(f"{name}-{len(planned):05d}", name, int(size)))
            left -= int(size)
    light = users - len(planned)
    if light <= 0:
        raise ValueError(f"{users} users leave none for the light band")
    low, high = BANDS[0][1:]
    raw = np.exp(rng.uniform(np.log(low), np.log(high), light))
    sizes = np.clip(raw * (left / raw.sum()), low, high).round().astype(int)
    for size in sizes:
        planned.append(PlannedUser(f"light-{len(planned):05d}", "light", int(size)))
    return planned


def activity_weights(planned: list[PlannedUser]) -> np.ndarray:
    """How often each user searches, relative to the others: in proportion to their memories
    (a user who saved more talks to the product more)."""
    sizes = np.array([user.memories for user in planned], dtype=float)
    return sizes / sizes.sum()


def searchers(planned: list[PlannedUser], count: int, *, band: str | None = None, seed: int = 3):
    """`count` users drawn by activity (within one band when given), with replacement."""
    rng = np.random.default_rng(seed)
    pool = [user for user in planned if band is None or user.band == band]
    picks = rng.choice(len(pool), size=count, p=activity_weights(pool))
    return [pool[i] for i in picks]
