"""Where a compressed file can be cut so that it ends inside one of the writer's appends:
the middle of a block that holds content, counted from the file's end (one such cut
for each of the given block numbers, 1 being the last such block; the empty last block
that ends a frame holds none). Reads the frames' structure only
(RFC 8878, 3.1.1); prints the cuts as bytes to take off the file's end, one a line.

    zstd_cut_points.py FILE.jsonl.zst BLOCK_FROM_END...
"""
import sys

FRAME_MAGIC = 0xFD2FB528


def block_spans(data):
    """[begin, end) of every whole block of the file's frames that holds content."""
    spans, at = [], 0
    while at + 5 <= len(data):
        magic = int.from_bytes(data[at:at + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame
            at += 8 + int.from_bytes(data[at + 4:at + 8], "little")
            continue
        if magic != FRAME_MAGIC:
            raise SystemExit(f"offset {at}: not a zstd frame")
        descriptor = data[at + 4]
        single_segment = (descriptor >> 5) & 1
        size_flag = descriptor >> 6
        at += 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
        at += 1 if size_flag == 0 and single_segment else (0, 2, 4, 8)[size_flag]
        while at + 3 <= len(data):
            header = int.from_bytes(data[at:at + 3], "little")
            end = at + 3 + (1 if (header >> 1) & 3 == 1 else header >> 3)
            if end > len(data):
                return spans
            if end - at > 3:
                spans.append((at, end))
            at = end
            if header & 1:  # the frame's last block, then its checksum if it has one
                at += 4 if (descriptor >> 2) & 1 else 0
                break
    return spans


def main():
    data = open(sys.argv[1], "rb").read()
    spans = block_spans(data)
    for number in map(int, sys.argv[2:]):
        if number > len(spans):
            raise SystemExit(f"the file has {len(spans)} blocks, not {number}")
        begin, end = spans[-number]
        print(len(data) - (begin + end) // 2)


main()
