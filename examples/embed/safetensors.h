/* A minimal safetensors reader and writer for the embedding demo: whole files in memory, tensors found by name.
 * Not part of spire's API; the demo needs some way to read inputs and write outputs, and safetensors is what
 * `spire run` and PyTorch use. */
#ifndef EMBED_SAFETENSORS_H_
#define EMBED_SAFETENSORS_H_

#include <stddef.h>
#include <stdint.h>

typedef struct st_file {
  char* bytes;        /* the whole file */
  size_t size;
  size_t header_end;  /* 8 + the JSON header's length: where the data starts */
} st_file;

/* 0 on success; on failure a message on stderr and -1. */
int st_read(const char* path, st_file* out);
/* Finds tensor `name`: its data and byte count, and its dtype as written ("F32", "I64", ...). */
int st_find(const st_file* f, const char* name, const void** data, size_t* bytes, char dtype[8]);
void st_free(st_file* f);

typedef struct st_tensor {
  const char* name;
  const char* dtype;     /* "F32", "F64", "I32", "I64", "BOOL" */
  int rank;
  const int64_t* shape;
  const void* data;
  size_t bytes;
} st_tensor;

int st_write(const char* path, const st_tensor* tensors, int count);

#endif
