// The cloud-provider plugin's one translation unit: the factory (cloudplugin.h) and its metadata, through moc.
#include "cloudplugin.h"
