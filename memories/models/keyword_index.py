"""The keyword index's tables (BM25 over postings of our own, per partition)."""

from django.db import models

from memories.models.memory import Memory


class KeywordPartition(models.Model):
    """Totals of one partition (an owner and scope carrier, see partition_key) that keyword
    ranking reads: its active memories and their indexed words. Each user's ranking uses only
    the partitions they may read, so nobody's scores depend on anyone else's memories."""

    partition = models.CharField(max_length=120, unique=True)
    memories = models.PositiveIntegerField(default=0)
    words = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return self.partition


class KeywordTerm(models.Model):
    """How many active memories of a partition hold a word (its document frequency). A row
    goes when its count reaches 0, so no word of a deleted memory stays behind."""

    partition = models.ForeignKey(KeywordPartition, on_delete=models.CASCADE, db_index=False)
    term = models.CharField(max_length=64)
    memories = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["partition", "term"], name="keyword_term_unique")
        ]

    def __str__(self) -> str:
        return self.term


class KeywordPosting(models.Model):
    """One word of one active memory: how often it occurs, and the memory's length in
    indexed words (for BM25's length normalisation)."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, db_index=False)
    partition = models.ForeignKey(KeywordPartition, on_delete=models.CASCADE, db_index=False)
    term = models.CharField(max_length=64)
    occurrences = models.PositiveIntegerField()
    length = models.PositiveIntegerField()

    class Meta:
        # Both indexes carry the columns a search reads (PostgreSQL's INCLUDE; SQLite has
        # no such clause and keeps the key columns alone): a search answers from the index
        # pages, without a visit to the table's page of each posting. A heavy user's postings
        # lie on as many table pages as it has memories, most of them out of cache.
        indexes = [
            # Postings of a word in the caller's partitions (the search).
            models.Index(
                fields=["partition", "term"],
                include=["memory", "occurrences", "length"],
                name="keyword_posting_term",
            ),
            # A memory's postings (unindexing, and the common words of found memories).
            models.Index(
                fields=["memory", "term"],
                include=["occurrences", "length"],
                name="keyword_posting_memory",
            ),
        ]

    def __str__(self) -> str:
        return self.term
