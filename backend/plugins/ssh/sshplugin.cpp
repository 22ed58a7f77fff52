// The SSH-host plugin's one translation unit: the factory (sshplugin.h) and its metadata, through moc.
#include "sshplugin.h"
