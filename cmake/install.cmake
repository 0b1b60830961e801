# `cmake --install BUILD [--prefix DIR]`: the programs, som's JIT backend module, libsampo (static, shared and the
# LD_PRELOAD library), the public header, the core library sources, the man pages and a
# pkg-config file.  Included from the top-level CMakeLists.txt after every area is added.
include(GNUInstallDirs)

if(TARGET som)
  install(TARGETS som RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET somjit_llvm)
  # the JIT's LLVM backend, loaded by som from bin/../lib/som/ (src/jit/CMakeLists.txt)
  install(TARGETS somjit_llvm LIBRARY DESTINATION lib/som)
endif()
if(TARGET sampo)
  install(TARGETS sampo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

if(TARGET sampo_lib)
  # libsampo.so: the whole engine (sampo_lib + analysis) with only the sampo_* API exported.
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/libsampo.map "{ global: sampo_*; local: *; };\n")
  add_library(sampo_shared SHARED ${PROJECT_SOURCE_DIR}/cmake/empty.c)
  target_link_libraries(sampo_shared PRIVATE -Wl,--whole-archive sampo_lib sampo_analysis
                                             -Wl,--no-whole-archive sampo_lib)
  target_link_options(sampo_shared PRIVATE
    -Wl,--version-script=${CMAKE_CURRENT_BINARY_DIR}/libsampo.map)
  set_target_properties(sampo_shared PROPERTIES OUTPUT_NAME sampo VERSION ${PROJECT_VERSION}
                                                SOVERSION ${PROJECT_VERSION_MAJOR})
  install(TARGETS sampo_lib sampo_shared
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/include/sampo.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  # The static library needs the analysis library too (its objects are not in libsampo.a).
  install(TARGETS sampo_analysis ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  set(PREFIX "@PREFIX@") # kept for the install step below
  configure_file(${PROJECT_SOURCE_DIR}/cmake/sampo.pc.in ${CMAKE_CURRENT_BINARY_DIR}/sampo.pc.gen
                 @ONLY)
  # The prefix is only known at install time (--prefix): substitute it then.
  install(CODE "
    file(READ \"${CMAKE_CURRENT_BINARY_DIR}/sampo.pc.gen\" _pc)
    string(REPLACE \"@PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" _pc \"\${_pc}\")
    file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/sampo.pc\" \"\${_pc}\")
    message(STATUS \"Installing: \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig/sampo.pc\")
  ")
endif()
if(TARGET sampo_preload)
  # Always PREFIX/lib: `sampo record` looks for it in ../lib next to its own executable.
  install(TARGETS sampo_preload LIBRARY DESTINATION lib)
endif()

# The core library is compiled into som; the sources are installed for reading and for
# SOM_CORELIB=PREFIX/share/sampo/core-lib.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core-lib/ DESTINATION ${CMAKE_INSTALL_DATADIR}/sampo/core-lib
        FILES_MATCHING PATTERN "*.som")
file(GLOB _sampo_man_pages ${PROJECT_SOURCE_DIR}/docs/man/*.1)
install(FILES ${_sampo_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/sampo)
