"""The MariaDB / MySQL source: binlog capture and incremental snapshots over a plain connection."""
