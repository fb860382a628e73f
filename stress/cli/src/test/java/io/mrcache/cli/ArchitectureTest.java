package io.mrcache.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layering the build enforces (this module sees every other one, so the rules run here): the library
 * ({@code mrcache-core}, {@code mrcache-ffm-verbs}) never depends on the stress modules, core never on native
 * code, no package cycles, and nothing outside the library reaches its non-API packages.
 */
class ArchitectureTest {
    static final String CORE = "io.mrcache.core..";
    static final String VERBS = "io.mrcache.verbs..";
    static final String UCX = "io.mrcache.ucx..";
    static final String[] STRESS = {"io.mrcache.stress..", "io.mrcache.cli..", "io.mrcache.bench..",
        "io.mrcache.jcstress.."};
    /** Packages whose public types are API. */
    static final String[] API = {"io.mrcache.core", "io.mrcache.core.cost", "io.mrcache.core.testing",
        "io.mrcache.core.micrometer",
        "io.mrcache.verbs", "io.mrcache.verbs.hooks", "io.mrcache.verbs.ibv", "io.mrcache.verbs.sim",
        "io.mrcache.verbs.registrar", "io.mrcache.ucx", "io.mrcache.ucx.transport"};
    /** Public only for the module's own use (their package-info says so); not API. */
    static final String[] INTERNAL = {"io.mrcache.core.events", "io.mrcache.verbs.internal"};

    static JavaClasses classes;

    @BeforeAll
    static void importClasses() {
        classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.mrcache");
    }

    @Test
    void theRulesSeeEveryModule() {
        for (String name : new String[] {"io.mrcache.core.RegistrationCache", "io.mrcache.verbs.sim.SimulatedHca",
            "io.mrcache.stress.injector.AddressReuseInjector", "io.mrcache.cli.Main", "io.mrcache.ucx.UcxRegistrar"}) {
            if (!classes.contain(name)) {
                throw new AssertionError(name + " was not imported: the rules below would check nothing");
            }
        }
    }

    @Test
    void coreDependsOnNoNativeCodeAndNoStressModule() {
        noClasses().that().resideInAPackage(CORE).should().dependOnClassesThat().resideInAnyPackage(concat(new String[] {VERBS}, STRESS))
                .because("core is pure Java that any transport embeds").check(classes);
    }

    @Test
    void coreDependsOnNoTransportModule() {
        noClasses().that().resideInAPackage(CORE).should().dependOnClassesThat().resideInAPackage(UCX)
                .check(classes);
    }

    @Test
    void theUcxModuleDependsOnCoreAloneOfTheProject() {
        noClasses().that().resideInAPackage(UCX).should().dependOnClassesThat()
                .resideInAnyPackage(concat(new String[] {VERBS}, STRESS)).check(classes);
    }

    @Test
    void ffmVerbsDependsOnNoStressModule() {
        noClasses().that().resideInAPackage(VERBS).should().dependOnClassesThat().resideInAnyPackage(STRESS)
                .because("ffm-verbs is a library jar").check(classes);
    }

    @Test
    void noPackageCycles() {
        slices().matching("io.mrcache.(**)").should().beFreeOfCycles().check(classes);
    }

    @Test
    void publicLibraryTypesLiveInApiPackagesOrSayTheyAreInternal() {
        classes().that().resideInAnyPackage(CORE, VERBS).and().haveModifier(JavaModifier.PUBLIC)
                .and().areTopLevelClasses()
                .should().resideInAnyPackage(concat(API, INTERNAL)).check(classes);
    }

    @Test
    void onlyTheLibraryAndItsOwnToolsReachItsInternals() {
        noClasses().that().resideOutsideOfPackages("io.mrcache.verbs..", "io.mrcache.stress..", "io.mrcache.cli..",
                "io.mrcache.bench..")
                .should().dependOnClassesThat().resideInAPackage("io.mrcache.verbs.internal")
                .because("native helpers are not API; only ffm-verbs and the project's own tools use them")
                .check(classes);
        noClasses().that().resideOutsideOfPackage("io.mrcache.core")
                .should().dependOnClassesThat().resideInAPackage("io.mrcache.core.events")
                .because("JFR events are committed by the cache alone").check(classes);
    }

    private static String[] concat(String[] a, String[] b) {
        String[] out = new String[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
