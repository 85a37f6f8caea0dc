<#-- One line per library: group:artifact:version (licenses), the form NOTICE lists them in (scripts/notice/check.sh) -->
<#list dependencyMap as e>
<#assign p = e.getKey()/>
  ${p.groupId}:${p.artifactId}:${p.version} (<#list e.getValue() as l>${l}<#sep>; </#sep></#list>)
</#list>
