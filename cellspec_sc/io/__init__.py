"""Reading and writing cellspec directories (Parquet or TSV data, ``cellspec.json``, ``MANIFEST.sha256``), and the
crash-safe publishing every writer of the package uses.

>>> import tempfile, pathlib
>>> from cellspec_sc.model import example
>>> x = example()
>>> read(write(x, pathlib.Path(tempfile.mkdtemp()) / "run1")).equals(x)
True
"""

from cellspec_sc.io._bounded import (
           DEFAULT_MAX_INFLATION,
           DEFAULT_MAX_METADATA_BYTES,
           DONE_MAX_BYTES,
           INFLATION_FLOOR_BYTES,
           MANIFEST_LINE_MAX_BYTES,
           ReadLimits,
)
from cellspec_sc.io._columns import (
           ARROW_TYPES,
           DAMAGED_DATA_ERRORS,
           arrow_to_frame,
           column_types_of,
           conform,
           damage_text,
)
from cellspec_sc.io._direct import BLOCK, DirectFile, suits_direct_io
from cellspec_sc.io._directory import (
           check_outlines_listed,
           feature_ids_of,
           format_header,
           listed_format,
           read,
           read_header,
           write,
)
from cellspec_sc.io._hashing import HashingFile, PieceHash
from cellspec_sc.io._manifest import DONE, METADATA, has_markers, read_manifest, verify_listed, write_manifest
from cellspec_sc.io._metadata import (
           JSON_TABLES,
           KNOWN_KEYS,
           MAX_DEPTH,
           MAX_NUMBER_CHARS,
           dump_document,
           frame_of_rows,
           load_document,
           parse_document,
           rows_of,
           supported_version,
)
from cellspec_sc.io._outlines import image_outlines, materialise_outline_files, outline_files
from cellspec_sc.io._parquet import (
           check_footer,
           check_stored_columns,
           encoded_parquet,
           fill_row_group,
           gather_row_group_stats,
           open_parquet,
           stats_for,
)
from cellspec_sc.io._publish import (
           CELLSPEC_DIRECTORY,
           HTML_FILE,
           PNG_FILE,
           TargetKind,
           check_target,
           files_lost_by_replacing,
           publishing,
           zarr_root_attributes,
)
from cellspec_sc.io._refusals import (
           ChangedSinceRead,
           NotACellspecDirectory,
           TargetExists,
           UndecodableData,
           UnlistedDataFile,
           UnlistedFileWarning,
           UnreadableFile,
           all_refusals,
)
from cellspec_sc.io._remote import (
           PIECE,
           UPLOAD_CLAIM,
           RemoteUpload,
           check_present,
           check_url_target,
           check_url_target_of,
           complete_directory_objects,
           fetch_listed,
           fetch_small,
           object_stamp,
           object_stamps,
           read_entries,
           stream_checked,
)
from cellspec_sc.io._remote_files import check_file_url, check_store_url, root_attributes, upload_file, upload_store
from cellspec_sc.io._remote_lazy import read_remote_lazy
from cellspec_sc.io._staging import fsync_dir, fsync_file, fsync_tree, start_writeback
from cellspec_sc.io._storage import (
           ATTEMPTS,
           BACKOFF_SECONDS,
           CONNECT_TIMEOUT_SECONDS,
           READ_TIMEOUT_SECONDS,
           AccessDenied,
           BucketNotFound,
           FetchedFile,
           Location,
           MissingCredentials,
           RemoteFile,
           StorageError,
           StorageUnreachable,
           Transfer,
           is_url,
           storage_call,
)
from cellspec_sc.io._tsv import SIGNIFICANT_DIGITS

__all__ = ["ARROW_TYPES", "BLOCK", "CELLSPEC_DIRECTORY", "DAMAGED_DATA_ERRORS", "DEFAULT_MAX_INFLATION",
           "DEFAULT_MAX_METADATA_BYTES", "DONE", "DONE_MAX_BYTES", "HTML_FILE", "INFLATION_FLOOR_BYTES", "JSON_TABLES",
           "KNOWN_KEYS", "MANIFEST_LINE_MAX_BYTES", "MAX_DEPTH", "MAX_NUMBER_CHARS", "METADATA", "PNG_FILE",
           "SIGNIFICANT_DIGITS", "ChangedSinceRead", "DirectFile", "HashingFile", "NotACellspecDirectory", "PieceHash",
           "ReadLimits", "TargetExists", "TargetKind", "UndecodableData", "UnlistedDataFile", "UnlistedFileWarning",
           "UnreadableFile", "all_refusals", "arrow_to_frame", "check_footer", "check_outlines_listed",
           "check_stored_columns", "check_target", "column_types_of", "conform", "damage_text", "dump_document",
           "encoded_parquet", "feature_ids_of", "files_lost_by_replacing", "fill_row_group", "format_header",
           "frame_of_rows", "fsync_dir", "fsync_file", "fsync_tree", "gather_row_group_stats", "has_markers",
           "image_outlines", "listed_format",
           "load_document", "materialise_outline_files", "open_parquet", "outline_files", "publishing", "read",
           "read_header", "read_manifest", "rows_of", "start_writeback", "stats_for", "suits_direct_io",
           "supported_version", "verify_listed", "write", "write_manifest", "zarr_root_attributes",
           # object storage
           "ATTEMPTS", "BACKOFF_SECONDS", "CONNECT_TIMEOUT_SECONDS", "PIECE", "READ_TIMEOUT_SECONDS", "UPLOAD_CLAIM",
           "AccessDenied", "BucketNotFound", "FetchedFile", "Location", "MissingCredentials", "RemoteFile",
           "RemoteUpload",
           "StorageError", "StorageUnreachable", "Transfer", "check_present", "check_url_target", "check_url_target_of",
           "check_file_url", "check_store_url",
           "complete_directory_objects", "fetch_listed", "fetch_small", "is_url", "object_stamp", "object_stamps",
           "parse_document", "read_entries", "read_remote_lazy", "root_attributes", "storage_call",
           "upload_file", "upload_store",
           "stream_checked"]
