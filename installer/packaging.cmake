# Debian packages (CPack DEB, `cmake --build build --target package`): two packages from one build —
#   traindeck         the console, its backend plugins and their interface library, desktop entry, AppStream
#                     metainfo, icons, man page; depends on traindeck-worker (the console starts a local worker)
#   traindeck-worker  the headless agent, traindeck-train, the Python helper user scripts import, a systemd unit
#                     traindeck-worker.service (user traindeck, state in /var/lib/traindeck-worker), man pages
# Dependencies come from dpkg-shlibdeps. Everything the packages install is named by install(... COMPONENT console
# or worker) in the CMakeLists beside the targets and below; a file with no component would go in neither.
# tests/package/package_test.sh builds them, runs lintian and installs, runs and purges them.
set(TRAINDECK_DEB_DIR ${PROJECT_BINARY_DIR}/packaging)
file(MAKE_DIRECTORY ${TRAINDECK_DEB_DIR}/worker-control)

# Man pages and the changelog gzipped as Debian wants them (-n: no name or time stamp, so builds are reproducible).
set(TRAINDECK_GZIPPED)
foreach(page traindeck.1 traindeck-cli.1 traindeck-worker.1 traindeck-train.1)
    add_custom_command(OUTPUT ${TRAINDECK_DEB_DIR}/${page}.gz
        COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/installer/man/${page} > ${TRAINDECK_DEB_DIR}/${page}.gz
        DEPENDS ${PROJECT_SOURCE_DIR}/installer/man/${page} VERBATIM)
    list(APPEND TRAINDECK_GZIPPED ${TRAINDECK_DEB_DIR}/${page}.gz)
endforeach()
string(TIMESTAMP TRAINDECK_CHANGELOG_DATE "%a, %d %b %Y 00:00:00 +0000" UTC)
file(WRITE ${TRAINDECK_DEB_DIR}/changelog
    "traindeck (${PROJECT_VERSION}) bookworm; urgency=medium\n\n"
    "  * Packaged with CPack from the TrainDeck sources.\n\n"
    " -- The TrainDeck developers <developers@traindeck.io>  ${TRAINDECK_CHANGELOG_DATE}\n")
add_custom_command(OUTPUT ${TRAINDECK_DEB_DIR}/changelog.gz
    COMMAND gzip -9n -c ${TRAINDECK_DEB_DIR}/changelog > ${TRAINDECK_DEB_DIR}/changelog.gz
    DEPENDS ${TRAINDECK_DEB_DIR}/changelog VERBATIM)
list(APPEND TRAINDECK_GZIPPED ${TRAINDECK_DEB_DIR}/changelog.gz)
add_custom_target(traindeck_package_files ALL DEPENDS ${TRAINDECK_GZIPPED})

# Maintainer scripts must be named exactly postinst, prerm, postrm.
foreach(script postinst prerm postrm)
    configure_file(${PROJECT_SOURCE_DIR}/installer/debian/worker-${script}
                   ${TRAINDECK_DEB_DIR}/worker-control/${script} COPYONLY FILE_PERMISSIONS OWNER_READ OWNER_WRITE
                   OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endforeach()

# The console's files that belong to no target.
install(FILES ${PROJECT_SOURCE_DIR}/resources/io.traindeck.TrainDeck.desktop
        DESTINATION ${CMAKE_INSTALL_DATADIR}/applications COMPONENT console)
install(FILES ${PROJECT_SOURCE_DIR}/resources/io.traindeck.TrainDeck.metainfo.xml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo COMPONENT console)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/icons/hicolor DESTINATION ${CMAKE_INSTALL_DATADIR}/icons
        COMPONENT console)
install(FILES ${TRAINDECK_DEB_DIR}/traindeck.1.gz ${TRAINDECK_DEB_DIR}/traindeck-cli.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT console)
# The worker's.
install(FILES ${PROJECT_SOURCE_DIR}/installer/debian/traindeck-worker.service DESTINATION /lib/systemd/system
        COMPONENT worker)
install(FILES ${PROJECT_SOURCE_DIR}/resources/python/traindeck.py DESTINATION lib/python3/dist-packages
        COMPONENT worker)
install(FILES ${PROJECT_SOURCE_DIR}/resources/examples/fashion-mlp.json
              ${PROJECT_SOURCE_DIR}/resources/examples/fashion-cnn.json
              ${PROJECT_SOURCE_DIR}/resources/examples/pytorch_fashion.py
              ${PROJECT_SOURCE_DIR}/resources/examples/pytorch_fashion_tensorboard.py
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/traindeck-worker/examples COMPONENT worker)
install(FILES ${TRAINDECK_DEB_DIR}/traindeck-worker.1.gz ${TRAINDECK_DEB_DIR}/traindeck-train.1.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT worker)
# Each package's copyright and changelog.
foreach(component_package console:traindeck worker:traindeck-worker)
    string(REPLACE ":" ";" pair ${component_package})
    list(GET pair 0 component)
    list(GET pair 1 package)
    install(FILES ${PROJECT_SOURCE_DIR}/installer/debian/copyright ${TRAINDECK_DEB_DIR}/changelog.gz
            DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME traindeck)
set(CPACK_PACKAGE_VENDOR "The TrainDeck developers")
set(CPACK_PACKAGE_CONTACT "The TrainDeck developers <developers@traindeck.io>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL console worker)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_CONSOLE_PACKAGE_NAME traindeck)
set(CPACK_DEBIAN_CONSOLE_PACKAGE_SECTION science)
set(CPACK_DEBIAN_CONSOLE_PACKAGE_DEPENDS "traindeck-worker (= ${PROJECT_VERSION})")
# SSH hosts are reached with OpenSSH's own client (backend/client/sshhost.h).
set(CPACK_DEBIAN_CONSOLE_PACKAGE_RECOMMENDS "openssh-client")
string(CONCAT CPACK_DEBIAN_CONSOLE_DESCRIPTION
    "desktop console to train models and watch every job live\n"
    "TrainDeck trains models on this machine's CPU and GPUs, on remote TrainDeck\n"
    "workers and on Slurm clusters, and shows every job live: loss and accuracy\n"
    "curves drawn from every point, GPU and CPU use, and money spent against a hard\n"
    "budget. Runs are kept in a local SQLite catalog where they can be queried,\n"
    "grouped and compared; datasets are versioned by content; hyperparameter sweeps\n"
    "stop bad trials early; a trained model exports to ONNX (fp32 and int8).")
set(CPACK_DEBIAN_WORKER_PACKAGE_NAME traindeck-worker)
set(CPACK_DEBIAN_WORKER_PACKAGE_SECTION science)
set(CPACK_DEBIAN_WORKER_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_WORKER_PACKAGE_RECOMMENDS "python3")
set(CPACK_DEBIAN_WORKER_PACKAGE_SUGGESTS "python3-torch, dataset-fashion-mnist, slurm-client")
set(CPACK_DEBIAN_WORKER_PACKAGE_CONTROL_EXTRA
    "${TRAINDECK_DEB_DIR}/worker-control/postinst;${TRAINDECK_DEB_DIR}/worker-control/prerm;${TRAINDECK_DEB_DIR}/worker-control/postrm")
set(CPACK_DEBIAN_WORKER_PACKAGE_CONTROL_STRICT_PERMISSION ON)
string(CONCAT CPACK_DEBIAN_WORKER_DESCRIPTION
    "TrainDeck's job agent and built-in trainer\n"
    "traindeck-worker runs, queues, supervises and meters training jobs behind an\n"
    "HTTP API: argv commands or built-in training specs, scheduled on CPU slots,\n"
    "memory and GPUs by priority, preempted through checkpoints and resumed bit for\n"
    "bit, with budgets and hyperparameter sweeps. traindeck-train is the built-in\n"
    "trainer (MLP and CNN on IDX or CSV data; ONNX and safetensors export). The\n"
    "package installs the system service traindeck-worker (not enabled).")
include(CPack)
