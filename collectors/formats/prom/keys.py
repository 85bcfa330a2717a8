"""The series id of each series key of a file, found by prediction or by the key's 64-bit hash.

A Prometheus file repeats the same series keys (`name{labels}`) in every scrape, in the same
order (or, in a dump, one series' samples after another). `KeyIndex` numbers the keys in the
order they were first seen, so a block's keys mostly run through consecutive key numbers (or
repeat one): `find` looks up every `STRIDE`-th key (an anchor), guesses the keys after it to be
the next numbers (or the same), and checks each guess equal to its key (a gather in order,
cheap). Keys the guess got wrong, and all keys when guesses keep failing, are looked up by
hash: the hashes of the known keys kept sorted, with a directory of where each range of hash
values starts (its top bits, about one hash per range), then checked equal to the key as well,
so two keys with the same hash are both kept, and found. No hash table is built per block.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from collectors.core.lineblocks import string_series

SEED = 0x5EED
UNKNOWN = -2  # `find`'s id for a key not seen yet (-1 is a known key the exact parser takes)
STRIDE = 32  # keys per anchor
MIN_HITS = 0.5  # guesses right less often than this: the next SKIP calls look up by hash only
SKIP = 8


def key_hashes(keys: pl.Series) -> np.ndarray:
    """A 64-bit hash of each key."""
    return keys.hash(SEED).to_numpy()


class KeyIndex:
    """Keys seen so far (numbered in the order added) and their series ids."""

    def __init__(self) -> None:
        self.keys = pl.Series("key", [], dtype=pl.String)  # key number -> key
        self.key_ids = np.empty(0, dtype=np.int64)  # key number -> series id
        self.hashes = np.empty(0, dtype=np.uint64)  # sorted
        self.numbers = np.empty(0, dtype=np.int64)  # the key number of each of `hashes`
        self.shift = np.uint64(63)
        self.start = np.zeros(3, dtype=np.int64)  # first index of each hash range, and the end
        self.skip = 0  # calls left that look up by hash only
        self.step = 1  # the next key number guessed 1 (scrape-major) or 0 (series-major) ahead

    def find(self, keys: pl.Series) -> np.ndarray:
        """The series id of each key (no nulls), UNKNOWN for the ones not added yet."""
        numbers = self.numbers_of(keys)
        known = numbers >= 0
        return np.where(known, self.key_ids[np.where(known, numbers, 0)], UNKNOWN) \
            if len(self.key_ids) else np.full(keys.len(), UNKNOWN, dtype=np.int64)

    def numbers_of(self, keys: pl.Series) -> np.ndarray:
        """The key number of each key, -1 for the ones not added yet."""
        n = keys.len()
        if self.skip or n < 2 * STRIDE or len(self.key_ids) == 0:
            self.skip = max(0, self.skip - 1)
            return self._hashed(keys)
        anchor = np.repeat(self._hashed(keys[np.arange(0, n, STRIDE)]), STRIDE)[:n]
        offset = np.tile(np.arange(STRIDE), -(-n // STRIDE))[:n]
        rows = np.arange(n)
        out = np.full(n, -1, dtype=np.int64)
        # scrape after scrape (the next key after each key), or one series at a time (the
        # same key again): the way the last block went first
        for step in (self.step, 1 - self.step):
            guess = self._guessed(keys, rows, anchor[rows] + step * offset[rows])
            out[rows] = guess
            if (guess < 0).sum() <= (1 - MIN_HITS) * len(rows):
                self.step = step
                break
            rows = rows[guess < 0]
        wrong = np.flatnonzero(out < 0)
        if len(wrong) > (1 - MIN_HITS) * n:
            self.skip = SKIP
        if len(wrong):
            out[wrong] = self._hashed(keys[pl.Series(wrong)])
        return out

    def _guessed(self, keys: pl.Series, rows: np.ndarray, guess: np.ndarray) -> np.ndarray:
        """`guess` (key numbers of keys[rows]) where right, -1 where not."""
        ok = (guess >= 0) & (guess < len(self.key_ids))
        guess = np.where(ok, guess, 0)
        mine = keys if len(rows) == keys.len() else keys[pl.Series(rows)]
        ok &= (self.keys[pl.Series(guess)] == mine).to_numpy()
        return np.where(ok, guess, -1)

    def _hashed(self, keys: pl.Series) -> np.ndarray:
        """`numbers_of` by hash alone."""
        out = np.full(keys.len(), -1, dtype=np.int64)
        if keys.len() == 0 or len(self.hashes) == 0:
            return out
        hashes = key_hashes(keys)
        top = (hashes >> self.shift).astype(np.int64)
        rows = np.arange(keys.len())
        pos, end = self.start[top], self.start[top + 1]
        while len(rows):
            pos = self._first_equal(hashes[rows], pos, end)
            at = pos >= 0
            rows, pos, end = rows[at], pos[at], end[at]
            number = self.numbers[pos]
            mine = keys if len(rows) == keys.len() else keys[pl.Series(rows)]
            same = (self.keys[pl.Series(number)] == mine).to_numpy()
            out[rows[same]] = number[same]
            # the same hash, another key: look at the next ones of that hash
            rows, pos, end = rows[~same], pos[~same] + 1, end[~same]
        return out

    def _first_equal(self, hashes: np.ndarray, pos: np.ndarray, end: np.ndarray) -> np.ndarray:
        """The first index in [pos, end) of `self.hashes` holding each hash, -1 if none."""
        found = np.full(len(hashes), -1, dtype=np.int64)
        todo = np.arange(len(hashes))
        pos = pos.copy()
        while len(todo):
            p = pos[todo]
            live = p < end[todo]
            todo, p = todo[live], p[live]
            hit = self.hashes[p] == hashes[todo]
            found[todo[hit]] = p[hit]
            todo = todo[~hit]
            pos[todo] += 1
        return found

    def add(self, keys: pl.Series, ids: pl.Series) -> None:
        """Add new keys (distinct, not added before; best in the order the file has them) with
        their series ids."""
        if keys.len() == 0:
            return
        first = self.keys.len()
        # a copy of the keys' bytes (exported as large_string): the block a key was cut from is
        # freed with the block
        keys = string_series("key", keys.to_arrow(compat_level=pl.CompatLevel.oldest()))
        self.keys = pl.concat([self.keys, keys], rechunk=True)
        self.key_ids = np.concatenate([self.key_ids, ids.cast(pl.Int64).to_numpy()])
        hashes = np.concatenate([self.hashes, key_hashes(keys)])
        order = np.argsort(hashes, kind="stable")
        self.hashes = hashes[order]
        self.numbers = np.concatenate([self.numbers, np.arange(first, self.keys.len())])[order]
        bits = max(1, int(len(self.hashes) - 1).bit_length())  # about one hash per range
        self.shift = np.uint64(64 - bits)
        self.start = np.searchsorted(self.hashes >> self.shift,
                                     np.arange((1 << bits) + 1, dtype=np.uint64))
        self.skip = 0
