# unmask_tokenize_commands: the tokenize / detokenize subcommands of unmask-engine, as a library so
# that tests can run them without spawning a process. include() this file from
# tools/unmask_engine/CMakeLists.txt and link unmask-engine against the target.
if(TARGET unmask_tokenize_commands)
  return()
endif()
add_library(unmask_tokenize_commands STATIC
  ${CMAKE_CURRENT_LIST_DIR}/tokenize_commands.cc
  ${CMAKE_CURRENT_LIST_DIR}/tokenize_commands.h
)
target_include_directories(unmask_tokenize_commands PUBLIC ${PROJECT_SOURCE_DIR} ${CLI11_INCLUDE_DIR})
target_link_libraries(unmask_tokenize_commands
  PUBLIC unmask_tokenizer
  PRIVATE nlohmann_json::nlohmann_json
)
