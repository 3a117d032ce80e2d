"""Log compaction: Kafka's cleaner (SkimpyOffsetMap, Cleaner, LogCleanerManager, LogCleaner).

Worker code (cleaner.cleaner, cleaner.worker) runs in other processes on paths and
offsets; cleaner.log_cleaner_manager and cleaner.log_cleaner run on the broker's loop.
"""
