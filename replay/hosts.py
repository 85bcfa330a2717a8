"""Which devices are hosts, as the telemetry names them (shared by every detector)."""

# the hosts: in a job, in an ibdev2netdev map, or reporting NIC counters (never guessed from a
# naming convention)
HOSTS = """(SELECT host AS device FROM job_hosts UNION SELECT host FROM ifmap
    UNION SELECT DISTINCT device FROM samples
    WHERE file_id IN (SELECT file_id FROM files WHERE family = 'nic'))"""
