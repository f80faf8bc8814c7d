# C example programs (examples/*.c): C11, only llama.h, linked to the shared library `lctx`, one ctest each
# on models/stories260K.gguf with small settings. Included from the top-level CMakeLists.txt after the
# `lctx` target is defined (and after enable_testing() for the tests).
set(LCTX_EXAMPLE_MODEL ${CMAKE_SOURCE_DIR}/models/stories260K.gguf)

foreach(example simple batched save-load-state embedding)
  string(REPLACE "-" "_" target example_${example})
  add_executable(${target} ${CMAKE_SOURCE_DIR}/examples/${example}.c)
  target_link_libraries(${target} PRIVATE lctx)
  # libm for embedding.c's sqrt; harmless elsewhere.
  target_link_libraries(${target} PRIVATE m)
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C C_STANDARD 11 C_STANDARD_REQUIRED ON
                                             C_EXTENSIONS OFF)
  if(LCTX_SANITIZE)
    # The sources stay C; the link goes through the C++ driver so that the sanitizers' C++ runtime
    # (needed by the instrumented C++ library) and libstdc++ come along.
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
  endif()
endforeach()

if(LCTX_BUILD_TESTS)
  add_test(NAME example_simple COMMAND example_simple ${LCTX_EXAMPLE_MODEL} 24 "Once upon a time")
  add_test(NAME example_batched COMMAND example_batched ${LCTX_EXAMPLE_MODEL} 3 16 "Once upon a time")
  # Exits non-zero when a restored continuation differs from the original one.
  add_test(NAME example_save_load_state
           COMMAND example_save_load_state ${LCTX_EXAMPLE_MODEL} 16
                   ${CMAKE_CURRENT_BINARY_DIR}/example-save-load-state.bin)
  add_test(NAME example_embedding_mean COMMAND example_embedding ${LCTX_EXAMPLE_MODEL} mean)
  add_test(NAME example_embedding_none COMMAND example_embedding ${LCTX_EXAMPLE_MODEL} none)
  set_tests_properties(example_simple example_batched example_save_load_state example_embedding_mean
                       example_embedding_none PROPERTIES LABELS examples TIMEOUT 60)
endif()
