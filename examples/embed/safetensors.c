#include "safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_read(const char* path, st_file* out) {
  FILE* f = fopen(path, "rb");
  if (!f) return fprintf(stderr, "%s: cannot open\n", path), -1;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  out->bytes = malloc(size > 0 ? (size_t)size + 1 : 1);
  out->size = size > 0 ? (size_t)size : 0;
  int ok = out->bytes && fread(out->bytes, 1, out->size, f) == out->size;
  fclose(f);
  uint64_t n = 0;
  if (ok && out->size >= 8) memcpy(&n, out->bytes, 8);
  if (!ok || out->size < 8 || n > out->size - 8) {
    free(out->bytes);
    return fprintf(stderr, "%s: not a safetensors file\n", path), -1;
  }
  out->header_end = 8 + (size_t)n;
  out->bytes[out->size] = '\0'; /* only ever read inside the header, which strstr below stays in */
  return 0;
}

/* The text after `"key"`, its colon and any spaces, searched from `from`; NULL when absent. */
static const char* value_of(const char* from, const char* key) {
  char quoted[512];
  snprintf(quoted, sizeof quoted, "\"%s\"", key);
  const char* at = strstr(from, quoted);
  if (!at) return NULL;
  at += strlen(quoted);
  while (*at == ' ' || *at == ':') ++at;
  return at;
}

int st_find(const st_file* f, const char* name, const void** data, size_t* bytes, char dtype[8]) {
  char* header = malloc(f->header_end - 8 + 1);
  memcpy(header, f->bytes + 8, f->header_end - 8);
  header[f->header_end - 8] = '\0';
  const char* at = value_of(header, name);
  const char* ty = at ? value_of(at, "dtype") : NULL;
  const char* off = at ? value_of(at, "data_offsets") : NULL;
  unsigned long long begin = 0, end = 0;
  int ok = ty && off && sscanf(off, "[ %llu , %llu", &begin, &end) == 2 && begin <= end &&
           end <= f->size - f->header_end;
  if (ok) {
    sscanf(ty, "\"%7[A-Z0-9]", dtype);
    *data = f->bytes + f->header_end + begin;
    *bytes = (size_t)(end - begin);
  }
  free(header);
  return ok ? 0 : -1;
}

void st_free(st_file* f) { free(f->bytes); }

int st_write(const char* path, const st_tensor* t, int count) {
  char header[1 << 14];
  size_t len = 0, offset = 0;
  len += snprintf(header + len, sizeof header - len, "{");
  for (int i = 0; i < count; ++i) {
    len += snprintf(header + len, sizeof header - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "",
                    t[i].name, t[i].dtype);
    for (int d = 0; d < t[i].rank; ++d)
      len += snprintf(header + len, sizeof header - len, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
    len += snprintf(header + len, sizeof header - len, "],\"data_offsets\":[%zu,%zu]}", offset, offset + t[i].bytes);
    offset += t[i].bytes;
  }
  len += snprintf(header + len, sizeof header - len, "}");
  if (len >= sizeof header) return fprintf(stderr, "%s: too many tensors\n", path), -1;
  while ((8 + len) % 8) header[len++] = ' '; /* the data starts 8-byte aligned */
  FILE* f = fopen(path, "wb");
  if (!f) return fprintf(stderr, "%s: cannot write\n", path), -1;
  uint64_t n = len;
  int ok = fwrite(&n, 8, 1, f) == 1 && fwrite(header, 1, len, f) == len;
  for (int i = 0; ok && i < count; ++i) ok = fwrite(t[i].data, 1, t[i].bytes, f) == t[i].bytes;
  ok = fclose(f) == 0 && ok;
  return ok ? 0 : (fprintf(stderr, "%s: cannot write\n", path), -1);
}
