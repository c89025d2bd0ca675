#!/usr/bin/env python3
"""Generate fsdelta-smb.txt, fsdelta's own dbench 4.00 loadfile (see README.md in this folder).

Deterministic: the same seed gives the same file. Run from this folder:
    python3 gen_fsdelta_smb.py > fsdelta-smb.txt

The model is an office client on an SMB share, written from the SMB operations a NetBench-style
trace contains, not from any existing loadfile: it saves, opens, edits, lists, renames and deletes
documents in a few folders, so that the operation mix is close to the published proportions of
dbench's client.txt (reads ~27 %, opens ~17 %, path queries ~16 %, closes ~13 %, writes ~9 %,
directory searches ~6 %, unlinks ~3.5 %, fs queries ~3 %, file queries ~3 %, set-info ~1.4 %,
flushes ~1.2 %, renames ~0.7 %, a few byte-range locks).
"""

import random
import sys

SEED = 20261202
TASKS = 900
FOLDERS = ["docs", "sheets", "mail", "slides"]
EXT = {"docs": "DOC", "sheets": "XLS", "mail": "MSG", "slides": "PPT"}
CHUNK = 65536

rng = random.Random(SEED)
out = []
handle = 1000
files = {}  # path -> size


def emit(line):
    out.append(line)


def base(*parts):
    return '"\\clients\\client1' + "".join("\\" + p for p in parts) + '"'


def new_handle():
    global handle
    handle += 1
    if handle > 60000:
        handle = 1001
    return handle


def doc_size():
    r = rng.random()
    if r < 0.60:
        return rng.randrange(1, 16) * 1024 + rng.randrange(0, 1024)
    if r < 0.95:
        return rng.randrange(16, 128) * 1024 + rng.randrange(0, 1024)
    return rng.randrange(128, 1024) * 1024


def write_file(h, size, start=0):
    off = start
    end = start + size
    while off < end:
        n = min(CHUNK, end - off)
        emit(f"WriteX {h} {off} {n} {n} NT_STATUS_OK")
        off += n


def read_file(h, size, passes=1):
    for _ in range(passes):
        off = 0
        while off < size:
            n = CHUNK if rng.random() < 0.8 else rng.choice([4096, 16384, 32768])
            got = min(n, size - off)
            emit(f"ReadX {h} {off} {n} {got} NT_STATUS_OK")
            off += n


def pick_existing():
    if not files:
        return None
    return rng.choice(sorted(files))


def task_create():
    folder = rng.choice(FOLDERS)
    name = f"{folder.upper()[:3]}{rng.randrange(100000):05d}.{EXT[folder]}"
    path = (folder, name)
    if path in files:
        return
    emit(f"QUERY_PATH_INFORMATION {base(*path)} 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND")
    emit(f"NTCreateX {base(*path)} 0x40 0x1 {new_handle()} NT_STATUS_OBJECT_NAME_NOT_FOUND")
    h = new_handle()
    emit(f"NTCreateX {base(*path)} 0x40 0x5 {h} NT_STATUS_OK")
    emit(f"QUERY_FILE_INFORMATION {h} 1007 NT_STATUS_OK")
    emit("QUERY_FS_INFORMATION 3 NT_STATUS_OK")
    size = doc_size()
    write_file(h, size)
    emit(f"SET_FILE_INFORMATION {h} 1004 NT_STATUS_OK")
    if rng.random() < 0.25:
        emit(f"Flush {h} NT_STATUS_OK")
    emit(f"Close {h} NT_STATUS_OK")
    files[path] = size


def task_open_read():
    path = pick_existing()
    if path is None:
        return
    size = files[path]
    emit(f"QUERY_PATH_INFORMATION {base(*path)} 1004 NT_STATUS_OK")
    emit(f"QUERY_PATH_INFORMATION {base(*path)} 1005 NT_STATUS_OK")
    h = new_handle()
    emit(f"NTCreateX {base(*path)} 0x40 0x1 {h} NT_STATUS_OK")
    emit(f"QUERY_FILE_INFORMATION {h} 1005 NT_STATUS_OK")
    read_file(h, size, passes=rng.choice([1, 1, 2, 3]))
    emit(f"Close {h} NT_STATUS_OK")


def task_list():
    folder = rng.choice(FOLDERS)
    emit(f"QUERY_PATH_INFORMATION {base(folder)} 1004 NT_STATUS_OK")
    emit(f"FIND_FIRST {base(folder, '*')} 260 1366 {len(files)} NT_STATUS_OK")
    emit(f"FIND_FIRST {base(folder, '~$*.TMP')} 260 1366 0 NT_STATUS_NO_SUCH_FILE")
    emit("QUERY_FS_INFORMATION 1 NT_STATUS_OK")


def task_save_with_backup():
    """Word's safe save: write a temp file, move the original aside, move the temp in place."""
    path = pick_existing()
    if path is None:
        return
    folder, name = path
    tmp = (folder, f"~WRL{rng.randrange(10000):04d}.TMP")
    bak = (folder, name + ".BAK")
    emit(f"QUERY_PATH_INFORMATION {base(*tmp)} 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND")
    h = new_handle()
    emit(f"NTCreateX {base(*tmp)} 0x40 0x2 {h} NT_STATUS_OK")
    size = max(1024, files[path] + rng.randrange(-4096, 16384))
    write_file(h, size)
    emit(f"Flush {h} NT_STATUS_OK")
    emit(f"Close {h} NT_STATUS_OK")
    emit(f"Rename {base(*path)} {base(*bak)} NT_STATUS_OK")
    emit(f"Rename {base(*tmp)} {base(*path)} NT_STATUS_OK")
    emit(f"Unlink {base(*bak)} 0x6 NT_STATUS_OK")
    emit(f"QUERY_PATH_INFORMATION {base(*bak)} 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND")
    files[path] = size


def task_edit():
    """A database-style edit: lock a record, rewrite it in place, append, unlock."""
    path = pick_existing()
    if path is None:
        return
    size = files[path]
    h = new_handle()
    emit(f"NTCreateX {base(*path)} 0x40 0x1 {h} NT_STATUS_OK")
    rec = rng.randrange(0, max(1, size // 512)) * 512
    locked = rng.random() < 0.3
    if locked:
        emit(f"LockX {h} {rec} 512 NT_STATUS_OK")
    n = min(4096, size - rec)
    emit(f"ReadX {h} {rec} 4096 {min(4096, size - rec)} NT_STATUS_OK")
    emit(f"WriteX {h} {rec} {n} {n} NT_STATUS_OK")
    add = rng.randrange(512, 8192)
    write_file(h, add, start=max(size, rec + n))
    if locked:
        emit(f"UnlockX {h} {rec} 512 NT_STATUS_OK")
    if rng.random() < 0.5:
        emit(f"Flush {h} NT_STATUS_OK")
    emit(f"Close {h} NT_STATUS_OK")
    files[path] = max(size, rec + n) + add


def task_delete():
    path = pick_existing()
    if path is None or len(files) < 12:
        return
    emit(f"QUERY_PATH_INFORMATION {base(*path)} 1004 NT_STATUS_OK")
    emit(f"Unlink {base(*path)} 0x6 NT_STATUS_OK")
    emit(f"QUERY_PATH_INFORMATION {base(*path)} 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND")
    del files[path]


def task_missing():
    folder = rng.choice(FOLDERS)
    h = new_handle()
    emit(f"NTCreateX {base(folder, 'DESKTOP.INI')} 0x40 0x1 {h} NT_STATUS_OBJECT_NAME_NOT_FOUND")
    emit(f"QUERY_PATH_INFORMATION {base(folder, 'THUMBS.DB')} 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND")
    emit(f"QUERY_PATH_INFORMATION {base(folder, 'NOPE', 'X.DOC')} 1004 "
         "NT_STATUS_OBJECT_PATH_NOT_FOUND")


TASK_WEIGHTS = [
    (task_create, 16),
    (task_open_read, 30),
    (task_list, 14),
    (task_save_with_backup, 8),
    (task_edit, 10),
    (task_delete, 12),
    (task_missing, 10),
]

emit("# fsdelta-smb.txt: fsdelta's own dbench 4.00 loadfile (generated by gen_fsdelta_smb.py,")
emit(f"# seed {SEED}; see README.md). An office client on an SMB share: it saves, opens, edits,")
emit("# lists, renames and deletes documents in four folders. Licence: as fsdelta (MIT OR Apache-2.0).")
emit('Deltree "\\clients\\client1" NT_STATUS_OK')
emit('Mkdir "\\clients" NT_STATUS_OK')
h = new_handle()
emit(f'NTCreateX "\\clients\\client1" 0x1 0x2 {h} NT_STATUS_OK')
emit(f"Close {h} NT_STATUS_OK")
for f in FOLDERS:
    h = new_handle()
    emit(f"NTCreateX {base(f)} 0x1 0x2 {h} NT_STATUS_OK")
    emit(f"Close {h} NT_STATUS_OK")
emit("QUERY_FS_INFORMATION 1 NT_STATUS_OK")
names = [t for t, w in TASK_WEIGHTS for _ in range(w)]
for _ in range(TASKS):
    rng.choice(names)()
emit('Deltree "\\clients\\client1" NT_STATUS_OK')
sys.stdout.write("\n".join(out) + "\n")
