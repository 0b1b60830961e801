# Writes a C file holding the core library sources (core-lib/*.som) as byte
# arrays, so `som` carries its own core library. Usage:
#   cmake -DSRC_DIR=core-lib -DOUT=corelib_data.c -P embed_corelib.cmake
file(GLOB files "${SRC_DIR}/*.som")
list(SORT files)
set(body "/* Generated from the core-lib directory by cmake/embed_corelib.cmake. Do not edit. */\n#include <stddef.h>\n#include <string.h>\n\n")
set(table "")
foreach(f ${files})
  get_filename_component(name "${f}" NAME_WE)
  file(READ "${f}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND body "static const char src_${name}[] = {${bytes}0};\n")
  string(APPEND table "    {\"${name}\", src_${name}},\n")
endforeach()
string(APPEND body "\nstatic const struct { const char *name; const char *src; } corelib[] = {\n${table}    {NULL, NULL},\n};\n\n")
string(APPEND body "const char *class_builtin_source(const char *name)\n{\n    for (int i = 0; corelib[i].name; i++)\n        if (strcmp(corelib[i].name, name) == 0) return corelib[i].src;\n    return NULL;\n}\n")
file(WRITE "${OUT}.tmp" "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
